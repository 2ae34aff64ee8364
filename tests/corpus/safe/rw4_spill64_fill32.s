# EXPECT: accept
# a value that fits in 32 bits, spilled as 64 and filled as 32: the same value, linked
stdw [%r10-16], 0
ldxw %r2, [%r1+24]
stxdw [%r10-8], %r2
ldxw %r3, [%r10-8]
jgt %r2, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
