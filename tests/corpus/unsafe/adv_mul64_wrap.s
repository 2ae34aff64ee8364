# EXPECT: memory access through a non-pointer
# adversarial case: mul64 wrap
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 3
add %r2, 2
lddw %r3, 0x4000000000000000
mul %r2, %r3
jlt %r2, 2, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
