# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case (pruning must compare what the other path needs, in either order): prune narrow vs full b
mov %r0, 0
ldxw %r2, [%r1+28]
stdw [%r10-16], 0
ldxb %r5, [%r1+32]
jeq %r2, 0, l
stxw [%r10-8], %r5
stw [%r10-4], 0
ja m
l:
stw [%r10-8], 0
stw [%r10-4], 0
m:
mov %r4, 0
mov %r4, 0
mov %r4, 0
mov %r4, 0
ldxw %r3, [%r10-8]
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
