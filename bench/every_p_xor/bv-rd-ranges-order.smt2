; MPICH's recursive-doubling all-reduce (allreduce_recursive_doubling.coll), its data step, pure bit-vectors: after the
; fold new rank n stands for the old ranks lo(n) .. hi(n) - 1 (lo = 2n, hi = 2n + 2 for n < rem; n + rem, n + rem + 1
; past), and at the head of the round with mask m (a power of two below pof2) its buffer is the sum, in rank order, over
; the old ranks of its aligned group of m new ranks, base = n AND NOT (m - 1) .. base + m - 1: lo(base) .. hi(base + m - 1) - 1.
; The round combines with the partner nd = n xor m (the rank dst = rank_of(nd)), tmp + buf when dst < my_id and buf +
; tmp otherwise. Claim: dst < r iff nd < n, and the first operand's range ends where the second's starts (so the sum
; is the group of 2m, in rank order, each contribution once).
; Claims, one file each (as one query, with the ranks of the model, Z3 did not answer in 120 s). This file: rank_of is increasing on new ranks: a < n iff rank_of(a) < rank_of(n) (so dst < my_id iff nd < n).
; expect: unsat
; measured: see scripts/every-p-xor-timings.sh
(declare-const p (_ BitVec 32))(declare-const pof2 (_ BitVec 32))(declare-const n (_ BitVec 32))(declare-const a (_ BitVec 32))(declare-const m (_ BitVec 32))
(define-fun rem () (_ BitVec 32) (bvsub p pof2))
(assert (bvuge p #x00000002)) (assert (bvult p #x80000000))
(assert (not (= pof2 #x00000000))) (assert (= (bvand pof2 (bvsub pof2 #x00000001)) #x00000000))
(assert (bvule pof2 p)) (assert (bvult p (bvshl pof2 #x00000001)))
(assert (bvult n pof2)) (assert (bvult a pof2))
(assert (not (= m #x00000000))) (assert (= (bvand m (bvsub m #x00000001)) #x00000000)) (assert (bvult m pof2))
(define-fun part ((x (_ BitVec 32))) Bool (or (bvuge x (bvshl rem #x00000001)) (= ((_ extract 0 0) x) #b1)))
(define-fun newrank ((x (_ BitVec 32))) (_ BitVec 32) (ite (bvult x (bvshl rem #x00000001)) (bvlshr x #x00000001) (bvsub x rem)))
(define-fun rank_of ((n (_ BitVec 32))) (_ BitVec 32) (ite (bvult n rem) (bvadd (bvshl n #x00000001) #x00000001) (bvadd n rem)))
(define-fun lo ((n (_ BitVec 32))) (_ BitVec 32) (ite (bvult n rem) (bvshl n #x00000001) (bvadd n rem)))
(define-fun hi ((n (_ BitVec 32))) (_ BitVec 32) (ite (bvult n rem) (bvadd (bvshl n #x00000001) #x00000002) (bvadd (bvadd n rem) #x00000001)))
(define-fun nd () (_ BitVec 32) (bvxor n m))
(define-fun dst () (_ BitVec 32) (rank_of nd))
(define-fun base () (_ BitVec 32) (bvand n (bvnot (bvsub m #x00000001))))
(define-fun based () (_ BitVec 32) (bvand nd (bvnot (bvsub m #x00000001))))
(define-fun top ((x (_ BitVec 32))) (_ BitVec 32) (bvsub (bvadd x m) #x00000001))
(assert (not (= (bvult a n) (bvult (rank_of a) (rank_of n)))))
(check-sat)
