# EXPECT: memory access through a non-pointer
# adversarial case: sdiv neg
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 7
add %r2, 8
sdiv %r2, -2
jslt %r2, 0, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
