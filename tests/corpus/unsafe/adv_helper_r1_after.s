# EXPECT: read of uninitialised register
# adversarial case: helper r1 after
mov %r0, 0
call 5
ldxw %r0, [%r1+80]
mov %r0, 0
exit
