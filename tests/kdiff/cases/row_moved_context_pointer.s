# kdiff case: a context field read through the context pointer plus a constant
# seed: 0x0
# kernel: refuse: dereference of modified ctx ptr R2 off=8 disallowed
# row: moved-context-pointer
mov %r2, %r1
add %r2, 8
ldxw %r0, [%r2+0]
exit
