# EXPECT: unsupported instruction
# adversarial case: ld abs
mov %r0, 0
.insn 0x0000000000000020
mov %r0, 0
exit
