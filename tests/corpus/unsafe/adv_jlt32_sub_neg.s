# EXPECT: read of uninitialised stack
# adversarial case (32-bit signed refinement): jlt32 sub neg
mov %r0, 0
ldxw %r2, [%r1+28]
and %r2, 15
sub %r2, 8
jlt32 %r2, 8, l
mov %r0, 0
exit
l:
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
