# EXPECT: stack access out of bounds
# adversarial case: stack var write past
mov %r0, 0
ldxb %r6, [%r1+32]
and %r6, 15
mov %r5, %r10
add %r5, -8
add %r5, %r6
stb [%r5+0], 1
mov %r0, 0
exit
