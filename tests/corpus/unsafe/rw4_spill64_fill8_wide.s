# EXPECT: stack access out of bounds
# near miss of safe/rw4_spill64_fill8_trunc: x & 0x1ff, a low byte up to 255
stdw [%r10-16], 0
ldxw %r3, [%r1+24]
and %r3, 0x1ff
stxdw [%r10-8], %r3
ldxb %r3, [%r10-8]
ja +0
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
