# EXPECT: partial read of spilled pointer
# an atomic add on a spilled pointer would corrupt it
mov %r0, 0
stxdw [%r10-8], %r1
mov %r2, 1
lock add [%r10-8], %r2
ldxdw %r3, [%r10-8]
ldxw %r0, [%r3+0]
mov %r0, 0
exit
