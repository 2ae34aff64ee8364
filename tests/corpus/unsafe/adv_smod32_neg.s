# EXPECT: memory access through a non-pointer
# adversarial case: smod32 neg
mov %r0, 0
ldxw %r2, [%r1+28]
smod32 %r2, 8
jgt %r2, 7, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
