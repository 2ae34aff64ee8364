# EXPECT: memory access through a non-pointer
# adversarial case: le16 trunc
mov %r0, 0
ldxw %r2, [%r1+28]
or %r2, 0x10000
le16 %r2
jlt %r2, 0x10000, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
