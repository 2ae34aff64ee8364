# EXPECT: unbounded
# adversarial case (second pass): mod_sdiv
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
mov %r3, %r2
sdiv %r3, 3
mul %r3, 3
sub %r2, %r3
mov %r5, %r10
add %r5, -8
add %r5, %r2
ldxb %r0, [%r5+0]
mov %r0, 0
exit
