# EXPECT: stack access out of bounds
# adversarial case (second pass): loop_idx_after
# a value only used as an index after the loop, grown inside it
mov %r0, 0
stdw [%r10-8], 0
mov %r3, 0
mov %r9, 0
l:
ldxw %r5, [%r1+24]
jgt %r5, 3, s
add %r3, 1
s:
add %r9, 1
jlt %r9, 12, l
and %r3, 15
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
