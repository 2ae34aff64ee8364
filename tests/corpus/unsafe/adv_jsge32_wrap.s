# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case (32-bit signed refinement): jsge32 wrap
mov %r0, 0
ldxdw %r2, [%r1+0]
and %r2, 0x8000000f
lddw %r3, 0xffffffff00000000
or %r2, %r3
jsgt32 %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
