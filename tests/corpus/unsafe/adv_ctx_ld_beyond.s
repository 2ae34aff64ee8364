# EXPECT: context access out of bounds
# adversarial case: ctx ld beyond
mov %r0, 0
ldxw %r0, [%r1+88]
mov %r0, 0
exit
