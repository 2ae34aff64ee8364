# EXPECT: memory access through a non-pointer
# adversarial case (pruning, joins): prune callee caller reg rev
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, l
mov %r6, 5
ja m
l:
mov %r6, %r1
m:
call local f
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
