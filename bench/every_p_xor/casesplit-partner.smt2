; recursive doubling, mask = 2^k: r xor 2^k as (ite bit_k(r) (- r 2^k) (+ r 2^k)), bit_k(r) = (mod (div r 2^k) 2), Ints only: the partner is a rank and its partner is r (p a power of two)
; expect: unsat
; measured (z3 4.8.12, shared 2-core machine, load ~5): 16.4 s
(define-fun pow2 ((x Int)) Int (ite (= x 0) 1 (ite (= x 1) 2 (ite (= x 2) 4 (ite (= x 3) 8 (ite (= x 4) 16 (ite (= x 5) 32 (ite (= x 6) 64 (ite (= x 7) 128 (ite (= x 8) 256 (ite (= x 9) 512 (ite (= x 10) 1024 (ite (= x 11) 2048 (ite (= x 12) 4096 (ite (= x 13) 8192 (ite (= x 14) 16384 (ite (= x 15) 32768 (ite (= x 16) 65536 (ite (= x 17) 131072 (ite (= x 18) 262144 (ite (= x 19) 524288 (ite (= x 20) 1048576 (ite (= x 21) 2097152 (ite (= x 22) 4194304 (ite (= x 23) 8388608 (ite (= x 24) 16777216 (ite (= x 25) 33554432 (ite (= x 26) 67108864 (ite (= x 27) 134217728 (ite (= x 28) 268435456 (ite (= x 29) 536870912 (ite (= x 30) 1073741824 (ite (= x 31) 2147483648 (ite (= x 32) 4294967296 0))))))))))))))))))))))))))))))))))
(define-fun clog2 ((x Int)) Int (ite (<= x 1) 0 (ite (<= x 1) 0 (ite (<= x 2) 1 (ite (<= x 4) 2 (ite (<= x 8) 3 (ite (<= x 16) 4 (ite (<= x 32) 5 (ite (<= x 64) 6 (ite (<= x 128) 7 (ite (<= x 256) 8 (ite (<= x 512) 9 (ite (<= x 1024) 10 (ite (<= x 2048) 11 (ite (<= x 4096) 12 (ite (<= x 8192) 13 (ite (<= x 16384) 14 (ite (<= x 32768) 15 (ite (<= x 65536) 16 (ite (<= x 131072) 17 (ite (<= x 262144) 18 (ite (<= x 524288) 19 (ite (<= x 1048576) 20 (ite (<= x 2097152) 21 (ite (<= x 4194304) 22 (ite (<= x 8388608) 23 (ite (<= x 16777216) 24 (ite (<= x 33554432) 25 (ite (<= x 67108864) 26 (ite (<= x 134217728) 27 (ite (<= x 268435456) 28 (ite (<= x 536870912) 29 (ite (<= x 1073741824) 30 (ite (<= x 2147483648) 31 (ite (<= x 4294967296) 32 33)))))))))))))))))))))))))))))))))))
(define-fun xm ((a Int) (m Int)) Int (ite (= (mod (div a m) 2) 1) (- a m) (+ a m)))
(declare-const p Int)(declare-const r Int)(declare-const k Int)
(assert (and (>= p 2) (< p 2147483648) (<= 0 r) (< r p) (<= 0 k) (< k (clog2 p))))
(assert (= p (pow2 (clog2 p))))
(define-fun m () Int (pow2 k))
(assert (not (and (= (xm (xm r m) m) r) (<= 0 (xm r m)) (< (xm r m) p))))
(check-sat)
