# EXPECT: division by possibly-zero value
# adversarial case: div32 upper
mov %r0, 0
ldxdw %r3, [%r1+0]
jeq %r3, 0, exit
ldxw %r2, [%r1+28]
div32 %r2, %r3
mov %r0, 0
exit
