# EXPECT: accept
# a divisor proven nonzero by a branch
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, +4
ldxw %r3, [%r1+32]
div %r3, %r2
stxw [%r1+80], %r3
mov %r0, 0
exit
