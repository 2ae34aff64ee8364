# EXPECT: accept
# be16 moves known bits: of [0x100, 0x10f] the low byte after the swap is
# exactly 1, a valid index into an 8-byte stack array
stdw [%r10-8], 0
ldxw %r2, [%r1+24]
and %r2, 0x0f
or %r2, 0x100
be16 %r2
and %r2, 0xff
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
