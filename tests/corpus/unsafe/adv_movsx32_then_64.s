# EXPECT: stack access out of bounds
# adversarial case (32-bit signed refinement): movsx32 then 64
mov %r0, 0
ldxh %r2, [%r1+28]
movsx1664 %r2, %r2
jsgt %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
