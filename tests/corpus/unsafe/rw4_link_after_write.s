# EXPECT: division by possibly-zero value
# near miss of safe/rw4_link_mov32: the value changes between the tested
# copy and the divisor's, so the test says nothing about the divisor
ldxdw %r3, [%r1+0]
div %r3, 1000
mov32 %r2, %r3
jeq %r2, 0, out
add %r3, 1
ldxdw %r5, [%r1+8]
mov32 %r4, %r3
div %r5, %r4
out:
mov %r0, 0
exit
