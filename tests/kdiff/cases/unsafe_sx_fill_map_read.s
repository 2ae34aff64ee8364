# kdiff case: a byte spilled and filled sign-extending: a signed check on the fill bounds the value (0xfc passes as -4), which indexes a map value
# seed: 0x0
# kernel: refuse: R5 max value is outside of the allowed memory range
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
stxb [%r10-1], %r1
ldxsb %r2, [%r10-1]
jsgt %r2, 7, +4
jslt %r2, -4, +3
mov %r5, %r7
add %r5, %r1
ldxdw %r0, [%r5+8]
mov %r0, 0
exit
