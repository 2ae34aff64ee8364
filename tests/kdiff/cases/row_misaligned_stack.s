# kdiff case: a misaligned 8-byte store and load on the stack
# seed: 0x0
# kernel: refuse: misaligned stack access off 0+0+-12 size 8
# row: misaligned-stack
stdw [%r10-16], 0
stdw [%r10-8], 0
stdw [%r10-12], 7
ldxdw %r0, [%r10-12]
exit
