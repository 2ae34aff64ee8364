# EXPECT: stack access out of bounds
# adversarial case (pruning, joins): prune precise idx
mov %r0, 0
ldxw %r2, [%r1+28]
stdw [%r10-8], 0
jeq %r2, 0, l
mov %r3, 7
ja m
l:
mov %r3, 8
m:
mov %r4, 0
mov %r4, 0
mov %r4, 0
mov %r4, 0
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
