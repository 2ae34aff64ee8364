# EXPECT: prohibited pointer arithmetic
# adversarial case (second pass): or_twice_var
stdw [%r10-16], 0
stdw [%r10-8], 0
ldxw %r2, [%r1+24]
and %r2, 7
mov %r5, %r10
add %r5, -8
or %r5, %r2
or %r5, %r2
add %r5, 4
ldxw %r0, [%r5+0]
mov %r0, 0
exit
