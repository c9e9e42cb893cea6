; MPICH's fold, in the prover's Int encoding with the round k split (docs/smt.md, XOR partners:
; encoding experiments): for a rank r that takes part (odd below 2 rem, or past it), dst =
; rank_of(newrank(r) XOR 2^k) is a rank, takes part, has new rank newrank(r) XOR 2^k, and its
; partner is r. This file is one case of 32 (the others differ in the asserted k only).
; expect: unsat
(define-fun pow2 ((x Int)) Int (ite (= x 0) 1 (ite (= x 1) 2 (ite (= x 2) 4 (ite (= x 3) 8 (ite (= x 4) 16 (ite (= x 5) 32 (ite (= x 6) 64 (ite (= x 7) 128 (ite (= x 8) 256 (ite (= x 9) 512 (ite (= x 10) 1024 (ite (= x 11) 2048 (ite (= x 12) 4096 (ite (= x 13) 8192 (ite (= x 14) 16384 (ite (= x 15) 32768 (ite (= x 16) 65536 (ite (= x 17) 131072 (ite (= x 18) 262144 (ite (= x 19) 524288 (ite (= x 20) 1048576 (ite (= x 21) 2097152 (ite (= x 22) 4194304 (ite (= x 23) 8388608 (ite (= x 24) 16777216 (ite (= x 25) 33554432 (ite (= x 26) 67108864 (ite (= x 27) 134217728 (ite (= x 28) 268435456 (ite (= x 29) 536870912 (ite (= x 30) 1073741824 (ite (= x 31) 2147483648 (ite (= x 32) 4294967296 0))))))))))))))))))))))))))))))))))
(define-fun clog2 ((x Int)) Int (ite (<= x 1) 0 (ite (<= x 1) 0 (ite (<= x 2) 1 (ite (<= x 4) 2 (ite (<= x 8) 3 (ite (<= x 16) 4 (ite (<= x 32) 5 (ite (<= x 64) 6 (ite (<= x 128) 7 (ite (<= x 256) 8 (ite (<= x 512) 9 (ite (<= x 1024) 10 (ite (<= x 2048) 11 (ite (<= x 4096) 12 (ite (<= x 8192) 13 (ite (<= x 16384) 14 (ite (<= x 32768) 15 (ite (<= x 65536) 16 (ite (<= x 131072) 17 (ite (<= x 262144) 18 (ite (<= x 524288) 19 (ite (<= x 1048576) 20 (ite (<= x 2097152) 21 (ite (<= x 4194304) 22 (ite (<= x 8388608) 23 (ite (<= x 16777216) 24 (ite (<= x 33554432) 25 (ite (<= x 67108864) 26 (ite (<= x 134217728) 27 (ite (<= x 268435456) 28 (ite (<= x 536870912) 29 (ite (<= x 1073741824) 30 (ite (<= x 2147483648) 31 (ite (<= x 4294967296) 32 33)))))))))))))))))))))))))))))))))))
(define-fun xor_pow2 ((x Int) (e Int)) Int (ite (= (pow2 e) 0) x (ite (= (mod (div x (pow2 e)) 2) 0) (+ x (pow2 e)) (- x (pow2 e)))))
(declare-const p Int)(declare-const r Int)(declare-const k Int)(declare-const kp Int)
(assert (and (>= p 2) (< p 2147483648) (<= 0 r) (< r p)))
(assert (= kp (- (clog2 (+ p 1)) 1)))
(define-fun pof2 () Int (pow2 kp))
(define-fun rem () Int (- p pof2))
(define-fun nr ((x Int)) Int (ite (< x (* 2 rem)) (ite (= (mod x 2) 0) (- 1) (div x 2)) (- x rem)))
(define-fun rk ((n Int)) Int (ite (< n rem) (+ (* 2 n) 1) (+ n rem)))
(assert (<= 0 k)) (assert (< k kp)) (assert (< (pow2 k) pof2))
(assert (not (= (nr r) (- 1))))
(define-fun nd () Int (xor_pow2 (nr r) k))
(define-fun dst () Int (rk nd))
(assert (or (< k 0) (> k 30)))
(assert (not (and (<= 0 dst) (< dst p) (not (= (nr dst) (- 1))) (= (nr dst) nd) (= (rk (xor_pow2 (nr dst) k)) r))))
(check-sat)
