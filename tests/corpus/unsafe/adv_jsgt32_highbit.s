# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case (32-bit signed refinement): jsgt32 highbit
mov %r0, 0
ldxw %r2, [%r1+28]
and %r2, 0x8000000f
jsgt32 %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
