# EXPECT: read of uninitialised stack
# adversarial case: callee frame r10 arg
mov %r0, 0
call local f
mov %r0, 0
exit
f:
mov %r1, %r10
add %r1, -8
call local g
exit
g:
ldxdw %r0, [%r1+0]
mov %r0, 0
exit
