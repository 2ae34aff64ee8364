# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# A 32-bit product of negative values: w2 in [-4, -1] squared is in [1, 16]
# (the low halves as signed values; the product fits in 32 bits and cannot
# cross zero).
stdw [%r10-8], 0
stdw [%r10-16], 0
stdw [%r10-24], 0
stdw [%r10-32], 0
ldxdw %r2, [%r1+0]
and %r2, 3
sub32 %r2, 4
mul32 %r2, %r2
mov %r4, %r10
add %r4, -17
add %r4, %r2
ldxb %r0, [%r4+0]
exit
