# kdiff case: a constant on the left of ==, not taken: the value differs from it
# seed: 0x49d512b45cfd867a
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
mov %r2, 0
mov %r0, 100
jeq %r2, %r1, +1
div %r0, %r1
exit
