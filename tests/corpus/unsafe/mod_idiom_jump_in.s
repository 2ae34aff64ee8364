# EXPECT: stack access out of bounds
# the x % 3 sequence with a jump landing after the mov: t need not be x / 3 * 3
stw [%r10-4], 0
stw [%r10-8], 0
stw [%r10-12], 0
ldxw %r2, [%r1+24]
ldxw %r3, [%r1+28]
jgt %r2, 5, mid
mov %r3, %r2
mid:
div %r3, 3
mul %r3, 3
sub %r2, %r3
lsh %r2, 2
mov %r5, %r10
add %r5, -12
add %r5, %r2
ldxw %r0, [%r5+0]
mov %r0, 0
exit
