# EXPECT: read of uninitialised register
# adversarial case: subprog r1 after
mov %r0, 0
call local f
ldxw %r0, [%r1+80]
mov %r0, 0
exit
f:
mov %r0, 0
exit
