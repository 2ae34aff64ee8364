# EXPECT: memory access through a non-pointer
# adversarial case (second pass): fact_across_call
mov %r0, 0
ldxw %r6, [%r1+24]
ldxw %r7, [%r1+28]
jgt %r6, %r7, out
mov %r1, %r6
call local g
jgt %r6, %r7, bad
out:
mov %r0, 0
exit
bad:
ldxb %r0, [%r7+0]
mov %r0, 0
exit
g:
mov %r0, %r1
exit
