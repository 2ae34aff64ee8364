# EXPECT: jump out of range
mov %r0, 0
.insn 0x0000000000050005
exit
