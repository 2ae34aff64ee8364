# EXPECT: partial read of spilled pointer
# adversarial case: spill ptr w read
mov %r0, 0
stxdw [%r10-8], %r1
ldxw %r0, [%r10-8]
and %r0, 1
exit
