# EXPECT: context access out of bounds
# adversarial case: ctx ptr sub back
mov %r0, 0
mov %r2, %r1
add %r2, 104
ldxw %r0, [%r2-16]
mov %r0, 0
exit
