# EXPECT: stack pointer escapes its frame
# adversarial case: callee store ptr to caller
mov %r0, 0
stdw [%r10-8], 0
mov %r1, %r10
add %r1, -8
call local f
ldxdw %r2, [%r10-8]
ldxdw %r0, [%r2+0]
mov %r0, 0
exit
f:
stdw [%r10-8], 0
mov %r2, %r10
add %r2, -8
stxdw [%r1+0], %r2
mov %r0, 0
exit
