# EXPECT: memory access through a non-pointer
# adversarial case: be16 range
mov %r0, 0
ldxb %r2, [%r1+28]
jeq %r2, 0, exit
be16 %r2
jgt %r2, 255, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
