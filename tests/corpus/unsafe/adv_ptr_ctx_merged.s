# EXPECT: pointer stored into context
# adversarial case: ptr ctx merged
mov %r0, 0
stxdw [%r1+72], %r10
mov %r0, 0
exit
