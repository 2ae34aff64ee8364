# EXPECT: function returns pointer to its own stack
# adversarial case: ret ptr sub
mov %r0, 0
call local f
ldxdw %r0, [%r0+0]
mov %r0, 0
exit
f:
stdw [%r10-8], 0
mov %r0, %r10
add %r0, -8
exit
