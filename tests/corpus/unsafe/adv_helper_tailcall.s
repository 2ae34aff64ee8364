# EXPECT: unknown helper
# adversarial case: helper tailcall
mov %r0, 0
call 12
mov %r0, 0
exit
