# kdiff case: x ^= 0 keeps x's bounds ([1, 65536] after +1), so 0 < x is always taken and the write into the read-only map behind it is dead; the kernel's XOR takes bounds from the tnum alone and explores it (it accepts the exact twin, mov x, x)
# seed: 0xa3a77577ed3ccff0
# kernel: refuse: write into map forbidden, value_size=32 off=19 size=4
# row: kernel-twin
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
add %r4, 1
xor %r4, 0
mov %r5, 0
jslt %r5, %r4, +1
stxw [%r0+19], %r9
mov %r0, %r8
exit
