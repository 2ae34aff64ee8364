# EXPECT: accept
# A format on the stack built from constant 8- and 4-byte stores is known
# byte for byte (a slot keeps one 4-byte value): "n=%d m=%x" has two
# conversions and r3, r4 are set; r5 is set too, as every format the
# program can write needs (unsafe/printk_stack_const_two_args).
lddw %r2, 0x253d6d2064253d6e
stxdw [%r10-16], %r2
stw [%r10-8], 0x78
mov %r3, 1
mov %r4, 2
mov %r5, 0
mov %r1, %r10
add %r1, -16
mov %r2, 12
call 6
mov %r0, 0
exit
