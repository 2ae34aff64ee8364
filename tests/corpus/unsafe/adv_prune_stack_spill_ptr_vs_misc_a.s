# EXPECT: memory access through a non-pointer
# adversarial case (pruning must compare what the other path needs, in either order): prune stack spill ptr vs misc a
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, l
stxdw [%r10-8], %r1
ja m
l:
stdw [%r10-8], 7
m:
mov %r4, 0
mov %r4, 0
mov %r4, 0
mov %r4, 0
ldxdw %r3, [%r10-8]
ldxw %r0, [%r3+80]
mov %r0, 0
exit
