# EXPECT: memory access through a non-pointer
# adversarial case (pruning must compare what the other path needs, in either order): prune callee arg a
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, l
mov %r3, %r1
ja m
l:
mov %r3, 5
m:
mov %r4, 0
mov %r4, 0
mov %r4, 0
mov %r4, 0
mov %r4, 0
call local f
mov %r0, 0
exit
f:
ldxw %r0, [%r3+80]
mov %r0, 0
exit
