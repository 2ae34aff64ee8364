# EXPECT: misaligned or partial pointer spill
# adversarial case: cmpxchg ptr src
mov %r0, 0
stdw [%r10-8], 0
mov %r0, 0
lock cmpxchg [%r10-8], %r1
ldxdw %r0, [%r10-8]
and %r0, 1
exit
