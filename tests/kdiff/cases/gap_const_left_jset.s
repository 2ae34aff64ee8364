# kdiff case: constant on the left of JSET
# seed: 0xf08727d53d853d97
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
mov %r2, 0xf0
jset %r2, %r1, +3
mov %r5, %r7
add %r5, %r1
ldxdw %r0, [%r5+40]
mov %r0, 0
exit
