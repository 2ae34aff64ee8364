# EXPECT: partial read of spilled pointer
# adversarial case: spill ptr b read
mov %r0, 0
stxdw [%r10-8], %r1
ldxb %r0, [%r10-1]
and %r0, 1
exit
