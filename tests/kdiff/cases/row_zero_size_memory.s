# kdiff case: ringbuf_output of zero bytes at the top of the frame
# seed: 0x0
# kernel: refuse: invalid read from stack R2 off=0 size=0
# row: zero-size-memory
lddw %r1, map[4]
mov %r2, %r10
mov %r3, 0
mov %r4, 0
call 130
exit
