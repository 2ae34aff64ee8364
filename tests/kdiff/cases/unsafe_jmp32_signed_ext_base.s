# kdiff case: two 32-bit signed checks on a sign extension of a 64-bit value's low half bound the extension, never the value itself (twin of gap_jmp32_signed_meet_ext)
# seed: 0x0
# kernel: refuse: math between map_value pointer and register with unbounded min value is not allowed
lddw %r7, map_value[1]
ldxdw %r9, [%r7+48]
movsx3264 %r8, %r9
mov %r3, 0
jslt32 %r3, %r8, +4
jslt32 %r8, 0, +3
mov %r5, %r7
add %r5, %r9
ldxb %r0, [%r5+0]
mov %r0, 0
exit
