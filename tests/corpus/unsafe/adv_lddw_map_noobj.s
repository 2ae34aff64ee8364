# EXPECT: unknown map index
# adversarial case: lddw map noobj
mov %r0, 0
lddw %r1, map[0]
mov %r0, 0
exit
