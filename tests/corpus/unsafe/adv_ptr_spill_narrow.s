# EXPECT: misaligned or partial pointer spill
# adversarial case: ptr spill narrow
mov %r0, 0
stxw [%r10-8], %r1
ldxw %r0, [%r10-8]
and %r0, 1
exit
