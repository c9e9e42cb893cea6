; MUTANT of bv-fold-part.smt2: past p = 64 the fold maps new rank n < rem back to rank 2 n (the even rank, which sat out) instead of
; 2 n + 1; wrong only for non-powers of two past 64 (rem = 0 on powers of two).
; expect: sat
; measured: see scripts/every-p-xor-timings.sh
(declare-const p (_ BitVec 32))(declare-const pof2 (_ BitVec 32))(declare-const r (_ BitVec 32))(declare-const m (_ BitVec 32))
(define-fun rem () (_ BitVec 32) (bvsub p pof2))
(assert (bvuge p #x00000002)) (assert (bvult p #x80000000))
(assert (not (= pof2 #x00000000))) (assert (= (bvand pof2 (bvsub pof2 #x00000001)) #x00000000))
(assert (bvule pof2 p)) (assert (bvult p (bvshl pof2 #x00000001)))
(assert (not (= m #x00000000))) (assert (= (bvand m (bvsub m #x00000001)) #x00000000)) (assert (bvult m pof2))
(assert (bvult r p))
(define-fun part ((x (_ BitVec 32))) Bool (or (bvuge x (bvshl rem #x00000001)) (= ((_ extract 0 0) x) #b1)))
(define-fun newrank ((x (_ BitVec 32))) (_ BitVec 32) (ite (bvult x (bvshl rem #x00000001)) (bvlshr x #x00000001) (bvsub x rem)))
(define-fun rank_of ((n (_ BitVec 32))) (_ BitVec 32) (ite (bvult n rem) (ite (bvugt p #x00000040) (bvshl n #x00000001) (bvadd (bvshl n #x00000001) #x00000001)) (bvadd n rem)))
(assert (part r))
(define-fun dst () (_ BitVec 32) (rank_of (bvxor (newrank r) m)))
(assert (not (part dst)))
(check-sat)
