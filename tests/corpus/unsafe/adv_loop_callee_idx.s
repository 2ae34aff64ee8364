# EXPECT: stack access out of bounds
# adversarial case (second pass): loop_callee_idx
mov %r0, 0
stdw [%r10-8], 0
mov %r6, 0
mov %r9, 0
l:
ldxw %r5, [%r1+24]
jgt %r5, 3, s
add %r6, 1
s:
add %r9, 1
jlt %r9, 12, l
and %r6, 15
mov %r1, %r10
add %r1, -8
mov %r2, %r6
call local g
mov %r0, 0
exit
g:
add %r1, %r2
ldxb %r0, [%r1+0]
mov %r0, 0
exit
