# EXPECT: unsupported call
# adversarial case: callx
mov %r0, 0
mov %r2, 0
call %r2
mov %r0, 0
exit
