# EXPECT: memory access through a non-pointer
# adversarial case (pruning, joins): prune callee caller stack
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, l
stxdw [%r10-8], %r1
ja m
l:
stdw [%r10-8], 5
m:
call local f
ldxdw %r6, [%r10-8]
ldxw %r0, [%r6+80]
mov %r0, 0
exit
f:
mov %r0, 0
ja g
g:
mov %r0, 0
mov %r0, 0
mov %r0, 0
mov %r0, 0
mov %r0, 0
exit
