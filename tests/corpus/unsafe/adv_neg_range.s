# EXPECT: read of uninitialised stack
# adversarial case: neg range
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 7
neg %r2
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
