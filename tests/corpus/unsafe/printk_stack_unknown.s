# EXPECT: is not from a constant 4- or 8-byte store), so r3-r5 must all be set; r4 is not
# A format on the stack with a byte the verifier cannot know (a 1-byte store
# of a computed value could be '%'): every value argument must be set, and
# r4 and r5 are not.
stdw [%r10-8], 0x6425
ldxb %r2, [%r1+24]
stxb [%r10-6], %r2
mov %r3, 1
mov %r1, %r10
add %r1, -8
mov %r2, 8
call 6
mov %r0, 0
exit
