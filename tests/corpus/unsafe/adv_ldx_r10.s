# EXPECT: write to frame pointer r10
# adversarial case: ldx r10
mov %r0, 0
stdw [%r10-8], 0
ldxdw %r10, [%r10-8]
mov %r0, 0
exit
