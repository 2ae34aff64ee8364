# EXPECT: pointer passed as scalar argument
# adversarial case (pruning, joins): prune printk r4 rev
mov %r0, 0
stdw [%r10-8], 0x6425
ldxw %r2, [%r1+28]
jeq %r2, 0, l
mov %r4, %r10
ja m
l:
mov %r4, 1
m:
mov %r1, %r10
add %r1, -8
mov %r2, 8
mov %r3, 1
mov %r5, 0
call 6
mov %r0, 0
exit
