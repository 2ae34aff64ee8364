# kdiff case (open: not run by ctest): (u16 + 32) ^ 24 is at least 32 by our exact XOR bounds, so 8 < x is always taken and the write into the read-only map behind it is dead; the kernel's XOR takes bounds from the known bits alone (umin 0) and explores the write. Sound, but no row explains it (the kernel twin rewrites only x ^= 0: row_kernel_twin_xor0.s). Found by kdiff_fuzz -s 0x5eed2, program 0xa3a77577ed3ccff0 (shrunk to xor 0 by the shrinker; this is the shape before).
# seed: 0xa3a77577ed3ccff0
# kernel: refuse: write into map forbidden, value_size=32 off=19 size=4
mov %r6, %r1
ldxb %r8, [%r6+63]
mov %r9, 0
stdw [%r10-8], 0
ldxw %r3, [%r10-8]
stxw [%r10-72], %r3
mov %r2, %r10
add %r2, -72
lddw %r1, map[2]
call 1
ldxh %r4, [%r6+60]
add %r4, 32
xor %r4, 24
mov %r5, 8
jslt %r5, %r4, +1
stxw [%r0+19], %r9
mov %r0, %r8
exit
