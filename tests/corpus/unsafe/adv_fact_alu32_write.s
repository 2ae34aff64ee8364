# EXPECT: memory access through a non-pointer
# adversarial case (second pass): fact_alu32_write
mov %r0, 0
ldxw %r2, [%r1+24]
ldxw %r3, [%r1+28]
jgt %r2, %r3, out
mov32 %r3, %r3
add32 %r3, -1
jgt %r2, %r3, bad
out:
mov %r0, 0
exit
bad:
ldxb %r0, [%r3+0]
mov %r0, 0
exit
