# EXPECT: unsupported lddw pseudo source
# adversarial case: lddw src3
mov %r0, 0
.insn 0x0000000000003118
.insn 0x0000000000000000
mov %r0, 0
exit
