# EXPECT: memory access through a non-pointer
# adversarial case: lsh wrap
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 3
add %r2, 1
lsh %r2, 63
jeq %r2, 0, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
