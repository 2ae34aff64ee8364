# EXPECT: stack access out of bounds
# adversarial case: stack var write below
mov %r0, 0
ldxw %r6, [%r1+32]
and %r6, 1023
mov %r5, %r10
add %r5, -8
sub %r5, %r6
stb [%r5+0], 1
mov %r0, 0
exit
