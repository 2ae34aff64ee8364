# EXPECT: r4 (conversion 2) is not set
# The format "%d %d" (one constant 8-byte store) needs r3 and r4; r4 is set
# on one path only, so on the other the helper would print a stale register.
lddw %r5, 0x6425206425
stxdw [%r10-8], %r5
ldxw %r2, [%r1+28]
mov %r3, 1
jeq %r2, 0, l
mov %r4, 2
l:
mov %r1, %r10
add %r1, -8
mov %r2, 8
call 6
mov %r0, 0
exit
