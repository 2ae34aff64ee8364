# EXPECT: accept
# a loop counted with 32-bit compares, writing an 8-byte stack buffer
stdw [%r10-8], 0
mov %r2, 0
loop:
mov %r3, %r10
add %r3, -8
add %r3, %r2
stb [%r3+0], 1
add32 %r2, 1
jlt32 %r2, 8, loop
ldxdw %r0, [%r10-8]
mov %r0, 0
exit
