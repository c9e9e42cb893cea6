; pure bit-vectors: the recursive-doubling barrier's knowledge step, m a power of two below p
; expect: unsat
; measured (z3 4.8.12, shared 2-core machine, load ~5): 0.34 s
(declare-const p (_ BitVec 32))(declare-const r (_ BitVec 32))(declare-const q (_ BitVec 32))(declare-const m (_ BitVec 32))
(assert (and (bvuge p #x00000002) (bvult p #x80000000) (bvult r p) (bvult q p) (bvult m p)))
(assert (= (bvand p (bvsub p #x00000001)) #x00000000))
(assert (= (bvand m (bvsub m #x00000001)) #x00000000)) (assert (not (= m #x00000000)))
(assert (not (= (bvult (bvxor r q) (bvshl m #x00000001)) (or (bvult (bvxor r q) m) (bvult (bvxor (bvxor r m) q) m)))))
(check-sat)
