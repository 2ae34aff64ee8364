# EXPECT: prohibited pointer arithmetic
# fp-4 is only 4-aligned: OR with 4 does not add
stdw [%r10-16], 0
stdw [%r10-8], 0
ldxw %r2, [%r1+24]
and %r2, 1
lsh %r2, 2
mov %r5, %r10
add %r5, -4
or %r5, %r2
ldxw %r0, [%r5+0]
mov %r0, 0
exit
