# kdiff case: two 32-bit signed checks that leave one value
# seed: 0x0
# kernel: accept
lddw %r7, map_value[1]
ldxw %r1, [%r7+0]
jsgt32 %r1, 0, +4
jslt32 %r1, 0, +3
mov32 %r5, %r1
add %r5, %r7
ldxdw %r0, [%r5+56]
mov %r0, 0
exit
