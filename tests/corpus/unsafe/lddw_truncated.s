# EXPECT: lddw split or truncated
mov %r0, 0
exit
.insn 0x0000000100000018
