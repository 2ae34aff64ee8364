# EXPECT: stack access out of bounds
# near miss of safe/rw4_bswap_known_bits: the known byte is 8, one past the array
stdw [%r10-8], 0
ldxw %r2, [%r1+24]
and %r2, 0x0f
or %r2, 0x800
be16 %r2
and %r2, 0xff
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
