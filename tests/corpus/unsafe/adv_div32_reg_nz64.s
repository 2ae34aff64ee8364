# EXPECT: division by possibly-zero value
# adversarial case: div32 reg nz64
mov %r0, 0
ldxdw %r3, [%r1+0]
jeq %r3, 0, exit
ldxdw %r2, [%r1+8]
mod32 %r2, %r3
mov %r0, 0
exit
