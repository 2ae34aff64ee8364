# kdiff case: two 32-bit signed checks fix the low half of a 64-bit value, not its upper half: the whole value is no index (twin of gap_jmp32_signed_meet)
# seed: 0x0
# kernel: refuse: math between map_value pointer and register with unbounded min value is not allowed
lddw %r7, map_value[1]
ldxdw %r1, [%r7+0]
jsgt32 %r1, 0, +4
jslt32 %r1, 0, +3
mov %r5, %r1
add %r5, %r7
ldxdw %r0, [%r5+56]
mov %r0, 0
exit
