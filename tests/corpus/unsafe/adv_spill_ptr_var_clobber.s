# EXPECT: read of partially overwritten spilled pointer
# adversarial case: spill ptr var clobber
mov %r0, 0
ldxb %r6, [%r1+32]
and %r6, 1
stxdw [%r10-8], %r1
mov %r5, %r10
add %r5, -8
add %r5, %r6
stb [%r5+0], 0x40
ldxdw %r3, [%r10-8]
ldxw %r0, [%r3+0]
mov %r0, 0
exit
