# EXPECT: unknown opcode
mov %r0, 0
.insn 0x00000000000000ff
exit
