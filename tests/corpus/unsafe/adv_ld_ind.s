# EXPECT: unsupported instruction
# adversarial case: ld ind
mov %r0, 0
.insn 0x0000000000000040
mov %r0, 0
exit
