; MUTANT of bv-heard-step.smt2: from mask 64 on the partner is r xor (mask / 2) (rounds still matched, knowledge does not grow); wrong only past p = 64 (m < p, m >= 64)
; expect: sat
; measured: see scripts/every-p-xor-timings.sh
(declare-const p (_ BitVec 32))(declare-const r (_ BitVec 32))(declare-const q (_ BitVec 32))(declare-const m (_ BitVec 32))
(assert (and (bvuge p #x00000002) (bvult p #x80000000) (bvult r p) (bvult q p) (bvult m p)))
(assert (= (bvand p (bvsub p #x00000001)) #x00000000))
(assert (= (bvand m (bvsub m #x00000001)) #x00000000)) (assert (not (= m #x00000000)))
(assert (not (= (bvult (bvxor r q) (bvshl m #x00000001)) (or (bvult (bvxor r q) m) (bvult (bvxor (bvxor r (ite (bvuge m #x00000040) (bvlshr m #x00000001) m)) q) m)))))
(check-sat)
