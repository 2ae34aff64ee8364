# EXPECT: stack access out of bounds
# adversarial case (second pass): loop_narrow_idx
mov %r0, 0
stdw [%r10-8], 0
stw [%r10-16], 0
mov %r9, 0
l:
ldxw %r5, [%r1+24]
jgt %r5, 3, s
ldxw %r3, [%r10-16]
add %r3, 1
stxw [%r10-16], %r3
s:
add %r9, 1
jlt %r9, 12, l
ldxw %r3, [%r10-16]
and %r3, 15
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
