# kdiff case: a 32-bit write of a value whose upper half is zero (add32 0): a check on it bounds the copy made before
# seed: 0x0
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
mov %r2, %r1
add32 %r1, 0
jgt %r1, 7, +3
mov %r5, %r7
add %r5, %r2
ldxdw %r0, [%r5+48]
mov %r0, 0
exit
