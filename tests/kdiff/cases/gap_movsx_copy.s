# kdiff case: a sign-extending copy of a value that fits: a check on the copy bounds the value
# seed: 0x0
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
movsx1664 %r2, %r1
jgt %r2, 7, +3
mov %r5, %r7
add %r5, %r1
ldxdw %r0, [%r5+48]
mov %r0, 0
exit
