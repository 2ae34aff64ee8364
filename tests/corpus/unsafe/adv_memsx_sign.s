# EXPECT: read of uninitialised stack
# ldxsb from a context field: the loaded byte is sign-extended, so a signed <= 7 check leaves [-128, 7]
mov %r0, 0
ldxsb %r3, [%r1+28]
jsgt %r3, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
