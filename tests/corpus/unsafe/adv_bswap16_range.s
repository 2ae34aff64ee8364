# EXPECT: memory access through a non-pointer
# adversarial case: bswap16 range
mov %r0, 0
ldxh %r2, [%r1+28]
and %r2, 0xff00
jeq %r2, 0, exit
bswap16 %r2
jgt %r2, 0xff, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
