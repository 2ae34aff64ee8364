# EXPECT: context access not at a declared field
# adversarial case: ctx ptr sub back
mov %r0, 0
mov %r2, %r1
add %r2, 100
ldxw %r0, [%r2-16]
mov %r0, 0
exit
