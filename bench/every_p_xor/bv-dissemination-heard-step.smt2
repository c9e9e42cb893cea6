; For comparison with the prover's own Int query (collv prove --every-p proofs/every-p/barrier_dissemination.proof
; --emit-smt2 DIR: consecution-heard-loop-while, 0.1-0.3 s): MPICH's dissemination barrier's knowledge step in pure
; bit-vectors, the mod p of the Int query as bvurem by the symbolic p (operands brought into 0 .. 2p - 1 first):
; heard_{k+1}(r, q) = heard_k(r, q) or heard_k((r - 2^k) mod p, q), heard_k(x, q) iff (x - q) mod p < 2^k.
; What a whole-bit-vector prover would ask for the ring-style models that are proved today: the cost of mod p.
; expect: unsat
; measured: see scripts/every-p-xor-timings.sh
(declare-const p (_ BitVec 32))(declare-const r (_ BitVec 32))(declare-const q (_ BitVec 32))(declare-const m (_ BitVec 32))
(assert (bvuge p #x00000002)) (assert (bvult p #x80000000)) (assert (bvult r p)) (assert (bvult q p))
(assert (not (= m #x00000000))) (assert (= (bvand m (bvsub m #x00000001)) #x00000000)) (assert (bvult m p))
(define-fun md ((x (_ BitVec 32))) (_ BitVec 32) (bvurem x p))
(define-fun src () (_ BitVec 32) (md (bvsub (bvadd r p) m)))
(define-fun heard ((x (_ BitVec 32)) (mm (_ BitVec 32))) Bool (bvult (md (bvsub (bvadd x p) q)) mm))
(assert (not (= (heard r (bvshl m #x00000001)) (or (heard r m) (heard src m)))))
(check-sat)
