# EXPECT: read of partially overwritten spilled pointer
# adversarial case: callee var ptr write
mov %r0, 0
stxdw [%r10-8], %r1
ldxb %r6, [%r1+28]
and %r6, 1
mov %r1, %r10
add %r1, -8
add %r1, %r6
mov %r2, %r6
call local f
ldxdw %r2, [%r10-8]
ldxw %r0, [%r2+0]
mov %r0, 0
exit
f:
stb [%r1+0], 0x10
mov %r0, 0
exit
