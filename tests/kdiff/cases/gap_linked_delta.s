# kdiff case: a copy with a constant delta: a check on the value bounds the copy
# seed: 0x0
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
mov %r2, %r1
add %r2, 5
jgt %r1, 10, +3
mov %r5, %r7
add %r5, %r2
ldxdw %r0, [%r5+40]
mov %r0, 0
exit
