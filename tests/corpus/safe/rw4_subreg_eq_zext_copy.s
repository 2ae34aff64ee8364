# EXPECT: accept
# w3 = w2 of a value with an unknown upper half: r3 is w2's low half
# zero-extended, so w2 < 9 bounds r3 (the kernel refuses this one)
call 5
mov %r2, %r0
mov32 %r3, %r2
jlt32 %r2, 9, l0
mov %r0, 0
exit
l0:
jlt %r3, 9, l1
sub %r0, %r1
l1:
mov %r0, 0
exit
