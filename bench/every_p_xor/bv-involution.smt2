; pure bit-vectors: the partner's partner is r
; expect: unsat
; measured (z3 4.8.12, shared 2-core machine, load ~5): 0.15 s
(declare-const p (_ BitVec 32))(declare-const r (_ BitVec 32))(declare-const i (_ BitVec 32))
(assert (and (bvuge p #x00000002) (bvult p #x80000000) (bvult r p) (bvuge i #x00000001) (bvult i p)))
(assert (= (bvand p (bvsub p #x00000001)) #x00000000))
(assert (not (= (bvxor (bvxor r i) i) r)))
(check-sat)
