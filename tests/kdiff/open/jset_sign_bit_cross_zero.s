# kdiff case (open: not run by ctest): r2 = r8 s>> 32 is in [S32_MIN, S32_MAX]; jset not taken with 0xffffffe0 clears bits 5..31, bit 31 (the sign) included, so r2 is in [0, 31] (our signed-range/known-bits deduction; the kernel keeps the signed range across zero and refuses). Sound, but no row explains it: the kernel twin has no exact rewrite for it. Found by kdiff_fuzz -s 0x5eed2.
# seed: 0x4177e3176aea8eb6
# kernel: refuse: math between map_value pointer and register with unbounded min value is not allowed
lddw %r7, map_value[1]
ldxdw %r8, [%r7+40]
mov %r2, %r8
arsh %r2, 32
mov32 %r3, -32
jset %r3, %r2, +2
mov %r5, %r7
add %r5, %r2
mov %r0, 0
exit
