# EXPECT: accept
# whole adjacent fields in one naturally aligned access: an 8-byte store over
# algo+proto, an 8-byte load over coll_type+n_ranks and over algo+proto
lddw %r2, 0x200000001
stxdw [%r1+72], %r2
stdw [%r1+72], -1
ldxdw %r3, [%r1+24]
ldxdw %r4, [%r1+72]
ldxdw %r5, [%r1+64]
mov %r0, 0
exit
