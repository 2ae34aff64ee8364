# EXPECT: is on the stack, which the program can write, so r3-r5 must all be set; r5 is not
# A format on the stack built from constant 8- and 4-byte stores is known
# byte for byte (a slot keeps one 4-byte value): "n=%d m=%x" has two
# conversions and r3, r4 are set, but not r5: a format the program can
# write may be rewritten before the call (by a store a verifier bug
# misplaces; ids_exploit_printk_leak), and the helper would then print r5
# as it stands.  Near miss of safe/printk_stack_const.
lddw %r2, 0x253d6d2064253d6e
stxdw [%r10-16], %r2
stw [%r10-8], 0x78
mov %r3, 1
mov %r4, 2
mov %r1, %r10
add %r1, -16
mov %r2, 12
call 6
mov %r0, 0
exit
