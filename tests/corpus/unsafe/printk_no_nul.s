# EXPECT: invalid bpf_printk format
# Eight known bytes "%d%d%d%d" and no NUL within the 8 bytes passed.
lddw %r1, 0x6425642564256425
stxdw [%r10-8], %r1
mov %r3, 1
mov %r4, 2
mov %r5, 3
mov %r1, %r10
add %r1, -8
mov %r2, 8
call 6
mov %r0, 0
exit
