# EXPECT: stack access out of bounds
# adversarial case (32-bit signed refinement): jslt32 neg
mov %r0, 0
ldxw %r2, [%r1+28]
and %r2, 0x8000000f
jslt32 %r2, 0, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
