# EXPECT: memory access through a non-pointer
# adversarial case: bswap64 range
mov %r0, 0
ldxb %r2, [%r1+28]
jeq %r2, 0, exit
bswap64 %r2
jlt %r2, 256, ok
ldxdw %r0, [%r2+0]
exit
ok:
mov %r0, 0
exit
