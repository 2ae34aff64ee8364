# EXPECT: read of uninitialised stack
# adversarial case: prune stack init
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, l
stdw [%r10-16], 0
ja m
l:
mov %r3, 0
m:
mov %r3, 1
ldxdw %r0, [%r10-16]
mov %r0, 0
exit
