# EXPECT: unsupported lddw pseudo source
# adversarial case: lddw src4
mov %r0, 0
.insn 0x0000000000004118
.insn 0x0000000000000000
mov %r0, 0
exit
