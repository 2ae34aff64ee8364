# EXPECT: memory access through a non-pointer
# adversarial case: bswap16 range.  The low bit of x & 0xff01 becomes bit 8
# after the swap, so the result may exceed 0xff and the bad path is
# reachable.  (With x & 0xff00 the swapped value is at most 0xff: the swap
# keeps known bits, so that version is safe and accepted.)
mov %r0, 0
ldxh %r2, [%r1+28]
and %r2, 0xff01
jeq %r2, 0, exit
bswap16 %r2
jgt %r2, 0xff, bad
mov %r0, 0
exit
bad:
ldxdw %r0, [%r2+0]
exit
