# EXPECT: accept
# range tracking through 16- and 32-bit spills: bounded, spilled narrow, filled, used
stdw [%r10-16], 0
ldxh %r3, [%r1+24]
jgt %r3, 7, out
stxh [%r10-24], %r3
stxw [%r10-8], %r3
ldxw %r3, [%r10-8]
ldxh %r5, [%r10-24]
add %r3, %r5
rsh %r3, 1
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
