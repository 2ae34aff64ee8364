# EXPECT: stack access out of bounds
# a 32-bit OR sets bit 8 of a clamped index: [0, 7] becomes [256, 263]
stdw [%r10-8], 0
ldxw %r2, [%r1+24]
and %r2, 7
or32 %r2, 256
mov %r3, %r10
add %r3, -8
add %r3, %r2
ldxb %r0, [%r3+0]
mov %r0, 0
exit
