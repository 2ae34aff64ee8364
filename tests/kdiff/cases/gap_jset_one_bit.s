# kdiff case: JSET taken with a one-bit constant: the bit is set
# seed: 0x0
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
mov %r0, 0
jset %r1, 1, +1
exit
mov %r0, 100
div %r0, %r1
exit
