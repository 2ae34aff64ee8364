# EXPECT: accept
# an 8-aligned stack base OR'ed with an index below 8 (compilers' aligned array indexing)
stdw [%r10-16], 0
stdw [%r10-8], 0
ldxw %r2, [%r1+24]
and %r2, 1
lsh %r2, 2
mov %r5, %r10
add %r5, -16
or %r5, %r2
ldxw %r0, [%r5+0]
mov %r0, 0
exit
