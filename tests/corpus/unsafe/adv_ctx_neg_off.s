# EXPECT: context access out of bounds
# adversarial case: ctx neg off
mov %r0, 0
ldxw %r0, [%r1-4]
mov %r0, 0
exit
