# EXPECT: unbounded
# adversarial case (second pass): narrow_spill_ldxsw_range
mov %r0, 0
stdw [%r10-16], 0
stdw [%r10-8], 0
ldxw %r2, [%r1+28]
jgt %r2, 7, out
or32 %r2, 0x80000000
stxw [%r10-20], %r2
ldxsw %r3, [%r10-20]
and %r3, 0xff
mov %r3, %r3
mov %r4, %r10
add %r4, -8
ldxsw %r3, [%r10-20]
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
