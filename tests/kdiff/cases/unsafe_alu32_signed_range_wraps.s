# kdiff case: a 32-bit sum that may wrap keeps no signed 32-bit range: (s8)x + 0x7fffff80 reaches 32768's side, the access is live (twin of gap_alu32_signed_range)
# seed: 0x0
# kernel: refuse: invalid variable-offset write to stack R5 var_off=(0x0; 0xffffffffffffffff) off=-6 size=1
lddw %r7, map_value[1]
ldxsb %r3, [%r7+59]
mov %r8, %r3
add32 %r8, 0x7fffff81
mov %r4, 0x80000000
jne32 %r8, %r4, +3
mov %r5, %r10
add %r5, %r3
stb [%r5-6], 0
mov %r0, %r8
exit
