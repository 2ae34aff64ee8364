# EXPECT: division by possibly-zero value
ldxw %r2, [%r1+32]
mov %r0, 100
mod %r0, %r2
and %r0, 1
exit
