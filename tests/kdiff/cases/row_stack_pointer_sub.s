# kdiff case: a bounded value subtracted from a frame pointer, then a load
# seed: 0x0
# kernel: refuse: R3 subtraction from stack pointer prohibited
# row: stack-pointer-sub
stdw [%r10-16], 0
stdw [%r10-8], 0
ldxw %r2, [%r1+0]
and %r2, 7
mov %r3, %r10
sub %r3, %r2
ldxb %r0, [%r3-9]
exit
