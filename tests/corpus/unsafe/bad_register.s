# EXPECT: invalid register
# dst field 11: mov %r11, 0
.insn 0x000000000000000bb7
mov %r0, 0
exit
