# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: id cmpxchg
mov %r0, 0
ldxdw %r2, [%r1+0]
stxdw [%r10-16], %r2
mov %r0, %r2
mov %r3, 0x100000
lock cmpxchg [%r10-16], %r3
jgt %r2, 7, exit
ldxdw %r5, [%r10-16]
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r5
ldxb %r0, [%r4+0]
mov %r0, 0
exit
