; pure bit-vectors: result's length step F(i) = max(F(i - 1), r xor i), F as in int2bv-length-step
; expect: unsat
; measured (z3 4.8.12, shared 2-core machine, load ~5): 0.34 s
(declare-const p (_ BitVec 32))(declare-const r (_ BitVec 32))(declare-const i (_ BitVec 32))
(define-fun smear ((y (_ BitVec 32))) (_ BitVec 32)
  (let ((a (bvor y (bvlshr y #x00000001))))
  (let ((b (bvor a (bvlshr a #x00000002))))
  (let ((c (bvor b (bvlshr b #x00000004))))
  (let ((d (bvor c (bvlshr c #x00000008))))
  (bvor d (bvlshr d #x00000010)))))))
(define-fun F ((t (_ BitVec 32))) (_ BitVec 32) (bvor (bvor r t) (bvlshr (smear (bvand r t)) #x00000001)))
(assert (and (bvuge p #x00000002) (bvult p #x80000000) (bvult r p) (bvuge i #x00000001) (bvult i p)))
(assert (= (bvand p (bvsub p #x00000001)) #x00000000))
(define-fun x () (_ BitVec 32) (bvxor r i))
(define-fun Fm () (_ BitVec 32) (F (bvsub i #x00000001)))
(assert (not (= (F i) (ite (bvuge Fm x) Fm x))))
(check-sat)
