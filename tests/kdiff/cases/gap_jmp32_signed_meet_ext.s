# kdiff case: two 32-bit signed checks through a copy of a zero extension (w9 = w9; r8 = r9): the low half, so the whole value, is 0
# seed: 0x578e638b67d98810
# kernel: accept
lddw %r7, map_value[1]
ldxdw %r9, [%r7+48]
mov32 %r9, %r9
mov %r8, %r9
mov %r3, 0
jslt32 %r3, %r9, +3
jslt32 %r9, 0, +2
mov %r5, %r7
add %r5, %r8
mov %r0, 0
exit
