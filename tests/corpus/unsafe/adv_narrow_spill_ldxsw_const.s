# EXPECT: unbounded
# adversarial case (second pass): narrow_spill_ldxsw_const
# narrow spill of 0x80000000 read back with sign extension is negative
mov %r0, 0
stdw [%r10-16], 0
stdw [%r10-8], 0
mov32 %r2, 0x80000000
stxw [%r10-20], %r2
ldxsw %r3, [%r10-20]
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
