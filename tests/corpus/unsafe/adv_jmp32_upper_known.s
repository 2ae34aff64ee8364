# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: jmp32 upper known
mov %r0, 0
ldxw %r2, [%r1+28]
lddw %r3, 0x100000000
or %r2, %r3
jgt32 %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
