# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: callee byte clobber spill
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 7
stxdw [%r10-8], %r2
stdw [%r10-16], 0
mov %r1, %r10
add %r1, -8
call local f
ldxdw %r3, [%r10-8]
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
f:
stb [%r1+0], 0x40
mov %r0, 0
exit
