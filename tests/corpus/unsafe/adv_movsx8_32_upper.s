# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case (32-bit signed refinement): movsx8 32 upper
mov %r0, 0
ldxb %r2, [%r1+28]
movsx832 %r2, %r2
jsgt32 %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
