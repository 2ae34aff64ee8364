# EXPECT: memory access through a non-pointer
# adversarial case: smod neg
mov %r0, 0
ldxdw %r2, [%r1+0]
smod %r2, 8
jslt %r2, 0, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
