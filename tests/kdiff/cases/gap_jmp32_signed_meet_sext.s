# kdiff case: two 32-bit signed checks on a sign extension of a 64-bit value's low half (r8 = (s32)r9): the extension is 0
# seed: 0x0
# kernel: accept
lddw %r7, map_value[1]
ldxdw %r9, [%r7+48]
movsx3264 %r8, %r9
mov %r3, 0
jslt32 %r3, %r8, +4
jslt32 %r8, 0, +3
mov %r5, %r7
add %r5, %r8
ldxb %r0, [%r5+0]
mov %r0, 0
exit
