# EXPECT: misaligned or partial pointer spill
# adversarial case: xchg ptr stack
mov %r0, 0
stdw [%r10-8], 0
lock xchg [%r10-8], %r1
ldxdw %r0, [%r10-8]
and %r0, 1
exit
