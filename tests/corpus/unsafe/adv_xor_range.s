# EXPECT: read of uninitialised stack
# adversarial case: xor range
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 3
xor %r2, -1
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
