# EXPECT: lddw split or truncated
# a lddw whose second slot is a real instruction
mov %r0, 0
.insn 0x0000000100000018
mov %r0, 1
exit
