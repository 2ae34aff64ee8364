# EXPECT: context access not at a declared field
# adversarial case: ctx load dw over reserved
mov %r0, 0
ldxdw %r0, [%r1+80]
mov %r0, 0
exit
