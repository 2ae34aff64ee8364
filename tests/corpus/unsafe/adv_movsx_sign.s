# EXPECT: read of uninitialised stack
# adversarial case: movsx sign
mov %r0, 0
ldxb %r2, [%r1+28]
movsx864 %r3, %r2
jsgt %r3, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
