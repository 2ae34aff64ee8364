# EXPECT: accept
# a 32-bit fill has a zero upper half: w3 = w2 is the same value, so w2 < 9 bounds r3
call 5
stxdw [%r10-8], %r0
ldxw %r2, [%r10-8]
mov32 %r3, %r2
jlt32 %r2, 9, l0
mov %r0, 0
exit
l0:
jlt %r3, 9, l1
sub %r0, %r1
l1:
mov %r0, 0
exit
