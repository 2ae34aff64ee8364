# EXPECT: memory access through a non-pointer
# adversarial case: callee clobber spilled ptr
mov %r0, 0
stxdw [%r10-8], %r1
mov %r1, %r10
add %r1, -8
call local f
ldxdw %r2, [%r10-8]
ldxw %r0, [%r2+0]
mov %r0, 0
exit
f:
stdw [%r1+0], 0x1000
mov %r0, 0
exit
