# EXPECT: read of partially overwritten spilled pointer
# adversarial case: spill ptr w clobber
mov %r0, 0
stxdw [%r10-8], %r1
stw [%r10-4], 0
ldxdw %r3, [%r10-8]
ldxw %r0, [%r3+0]
mov %r0, 0
exit
