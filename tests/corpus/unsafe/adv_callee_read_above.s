# EXPECT: stack access out of bounds
# adversarial case: callee read above
mov %r0, 0
stdw [%r10-8], 0
mov %r1, %r10
add %r1, -8
call local f
exit
f:
ldxdw %r0, [%r1+8]
mov %r0, 0
exit
