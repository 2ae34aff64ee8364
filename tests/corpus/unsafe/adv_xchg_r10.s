# EXPECT: misaligned or partial pointer spill
# adversarial case: xchg r10
mov %r0, 0
stdw [%r10-8], 0
lock xchg [%r10-8], %r10
mov %r0, 0
exit
