; MPICH's non-power-of-two fold (allreduce_recursive_doubling.coll, reduce_scatter_recursive_halving.coll), pure bit-vectors:
; pof2 the largest power of two <= p, rem = p - pof2; a rank takes part in the doubling if it is odd among the first
; 2 rem or past them, with newrank = r div 2 there and r - rem past them; the partner of round m (a power of two
; below pof2) is newdst = newrank xor m, the rank dst = 2 newdst + 1 if newdst < rem else newdst + rem. Claims (one
; file each: as one conjunction Z3 did not answer in 60 s, and in one file with push/pop 116 s): newrank < pof2, dst is a rank, dst takes part, its
; newrank is newdst, and rank_of(newrank r) = r (so dst's partner in round m, rank_of(newdst xor m), is r).
; This file: newrank < pof2.
; expect: unsat
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
(define-fun rank_of ((n (_ BitVec 32))) (_ BitVec 32) (ite (bvult n rem) (bvadd (bvshl n #x00000001) #x00000001) (bvadd n rem)))
(assert (part r))
(define-fun dst () (_ BitVec 32) (rank_of (bvxor (newrank r) m)))
(assert (not (bvult (newrank r) pof2)))
(check-sat)
