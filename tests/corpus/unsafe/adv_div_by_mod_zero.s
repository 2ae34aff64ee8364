# EXPECT: division by possibly-zero value
# adversarial case: div by mod zero
mov %r0, 0
ldxdw %r2, [%r1+0]
ldxb %r3, [%r1+28]
mod %r3, 1
div %r2, %r3
mov %r0, 0
exit
