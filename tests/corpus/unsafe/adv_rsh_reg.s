# EXPECT: memory access through a non-pointer
# adversarial case: rsh reg
mov %r0, 0
ldxb %r2, [%r1+28]
ldxb %r3, [%r1+32]
and %r3, 63
lddw %r4, -1
rsh %r4, %r3
jlt %r4, 2, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r4+0]
exit
