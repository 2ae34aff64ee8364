# EXPECT: memory access through a non-pointer
# adversarial case (second pass): fact_fill
# a fill from the stack overwrites the compared register: the repeated test must fork again
mov %r0, 0
ldxw %r2, [%r1+24]
ldxw %r3, [%r1+28]
ldxw %r4, [%r1+32]
stxdw [%r10-16], %r4
jgt %r2, %r3, out
ldxdw %r2, [%r10-16]
jgt %r2, %r3, bad
out:
mov %r0, 0
exit
bad:
ldxb %r0, [%r3+0]
mov %r0, 0
exit
