# EXPECT: misaligned or partial pointer spill
# adversarial case: ptr spill unaligned
mov %r0, 0
stxdw [%r10-12], %r1
ldxdw %r0, [%r10-12]
ldxw %r0, [%r0+0]
mov %r0, 0
exit
