# kdiff case: a 32-bit sum of a sign-extended byte keeps its signed 32-bit range ([-128, 127]): it is never 32768, so the access behind the test is dead
# seed: 0xd63c8b83fa8337d0
# kernel: accept
lddw %r7, map_value[1]
ldxsb %r3, [%r7+59]
mov %r8, %r3
add32 %r8, 0
mov %r4, 32768
jne32 %r8, %r4, +3
mov %r5, %r10
add %r5, %r3
stb [%r5-6], 0
mov %r0, %r8
exit
