# EXPECT: unsupported call
# adversarial case: kfunc call
mov %r0, 0
.insn 0x0000000100002085
mov %r0, 0
exit
