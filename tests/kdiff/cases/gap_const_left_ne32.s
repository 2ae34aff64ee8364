# kdiff case: a constant on the left of != (32-bit), taken: the value differs from it
# seed: 0x49d512b45cfd867a
# kernel: accept
lddw %r7, map_value[1]
ldxb %r1, [%r7+0]
mov32 %r2, 0
mov %r0, 100
jne32 %r2, %r1, +1
exit
div %r0, %r1
exit
