# EXPECT: variable-offset context access
# adversarial case (second pass): merged 8-byte store at a variable offset that may cover a read-only field
mov %r0, 0
ldxw %r3, [%r1+24]
and %r3, 8
mov %r2, %r1
add %r2, %r3
stdw [%r2+72], 0
exit
