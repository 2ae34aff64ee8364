# EXPECT: accept
# (x & 0x107) spilled as 64, filled as 8: the low byte, [0, 7]
stdw [%r10-16], 0
ldxw %r3, [%r1+24]
and %r3, 0x107
stxdw [%r10-8], %r3
ldxb %r3, [%r10-8]
ja +0
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
