# kdiff case: low bits OR-ed into a 16-aligned frame pointer, then a load
# seed: 0x0
# kernel: refuse: R3 bitwise operator |= on pointer prohibited
# row: stack-pointer-or
stdw [%r10-16], 0
stdw [%r10-8], 0
ldxw %r2, [%r1+0]
and %r2, 7
mov %r3, %r10
add %r3, -16
or %r3, %r2
ldxb %r0, [%r3+0]
exit
