# kdiff case: one 32-bit signed check leaves the low half in [S32_MIN, 0]: not a bounded index (twin of gap_jmp32_signed_meet)
# seed: 0x0
# kernel: refuse: R5 unbounded memory access, make sure to bounds check any such access
lddw %r7, map_value[1]
ldxw %r1, [%r7+0]
jsgt32 %r1, 0, +3
mov32 %r5, %r1
add %r5, %r7
ldxdw %r0, [%r5+56]
mov %r0, 0
exit
