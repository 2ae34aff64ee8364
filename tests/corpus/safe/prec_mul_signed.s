# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# A product of signed ranges: r2 in [-4, 3] times 3 is in [-12, 9] (each
# product of the bounds, none overflowing), so fp-16 + r2 stays in the
# 32 bytes written.  Near miss: unsafe/prec_mul_signed_near.
stdw [%r10-8], 0
stdw [%r10-16], 0
stdw [%r10-24], 0
stdw [%r10-32], 0
ldxdw %r2, [%r1+0]
and %r2, 7
sub %r2, 4
mul %r2, 3
mov %r4, %r10
add %r4, -16
add %r4, %r2
ldxb %r0, [%r4+0]
exit
