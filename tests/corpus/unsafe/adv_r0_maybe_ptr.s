# EXPECT: pointer returned from program
# adversarial case: r0 maybe ptr
mov %r0, 0
ldxw %r2, [%r1+28]
jeq %r2, 0, l
mov %r0, %r1
l:
exit
