# EXPECT: memory access through a non-pointer
# adversarial case (second pass): fact_xchg
mov %r0, 0
ldxw %r2, [%r1+24]
ldxw %r3, [%r1+28]
ldxw %r4, [%r1+32]
stxdw [%r10-8], %r4
jgt %r2, %r3, out
mov %r5, %r10
lock xchg [%r5-8], %r2
jgt %r2, %r3, bad
out:
mov %r0, 0
exit
bad:
ldxb %r0, [%r3+0]
mov %r0, 0
exit
