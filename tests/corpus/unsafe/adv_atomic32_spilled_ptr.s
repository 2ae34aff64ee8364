# EXPECT: partial read of spilled pointer
# adversarial case: atomic32 spilled ptr
mov %r0, 0
stxdw [%r10-8], %r1
mov %r2, 1
lock add32 [%r10-8], %r2
ldxdw %r3, [%r10-8]
ldxw %r0, [%r3+0]
mov %r0, 0
exit
