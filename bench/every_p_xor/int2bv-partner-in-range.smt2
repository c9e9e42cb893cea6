; pairwise pof2 path: the partner r xor i is a rank (p a power of two). Ints, xor through int2bv/bv2int.
; expect: unsat
; measured (z3 4.8.12, shared 2-core machine, load ~5): 5.2 s
(define-fun bxor ((x Int) (y Int)) Int (bv2int (bvxor ((_ int2bv 32) x) ((_ int2bv 32) y))))
(define-fun band ((x Int) (y Int)) Int (bv2int (bvand ((_ int2bv 32) x) ((_ int2bv 32) y))))
(define-fun bor ((x Int) (y Int)) Int (bv2int (bvor ((_ int2bv 32) x) ((_ int2bv 32) y))))
(declare-const p Int)(declare-const r Int)(declare-const i Int)
(assert (and (>= p 2) (< p 2147483648) (<= 0 r) (< r p) (<= 1 i) (<= i (- p 1))))
(assert (= (band p (- p 1)) 0))
(assert (not (and (<= 0 (bxor r i)) (< (bxor r i) p))))
(check-sat)
