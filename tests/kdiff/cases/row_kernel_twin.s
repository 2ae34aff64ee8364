# kdiff case: a byte spilled and filled back: a check on the fill bounds the value (the kernel does not track narrow spills; it accepts the exact twin, where the fill is the value)
# seed: 0x0
# kernel: refuse: R5 max value is outside of the allowed memory range
# row: kernel-twin
lddw %r7, map_value[1]
ldxb %r0, [%r7+0]
stxb [%r10-1], %r0
ldxb %r4, [%r10-1]
jgt %r4, 7, +3
mov %r5, %r7
add %r5, %r0
ldxb %r0, [%r5+0]
mov %r0, 0
exit
