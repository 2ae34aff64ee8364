# EXPECT: memory access through a non-pointer
# adversarial case: mul32 wrap
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 3
add %r2, 2
mul32 %r2, 0x40000000
jlt %r2, 0x80000000, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
