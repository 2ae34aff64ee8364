# EXPECT: context access not at a declared field
# adversarial case: ctx load dw over proto+n_channels, not 8-byte aligned
mov %r0, 0
ldxdw %r0, [%r1+76]
mov %r0, 0
exit
