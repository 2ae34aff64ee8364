# EXPECT: unknown map index
# adversarial case: lddw src2
mov %r0, 0
.insn 0x0000000000002118
.insn 0x0000000000000000
mov %r0, 0
exit
