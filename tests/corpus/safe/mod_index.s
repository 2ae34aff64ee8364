# EXPECT: accept
# x % 3 as compilers lower it (t = x; t /= 3; t *= 3; x -= t) indexing a 12-byte stack array
stw [%r10-4], 0
stw [%r10-8], 0
stw [%r10-12], 0
ldxw %r2, [%r1+24]
mov %r3, %r2
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
