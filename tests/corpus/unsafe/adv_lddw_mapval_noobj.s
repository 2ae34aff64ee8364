# EXPECT: unknown map index
# adversarial case: lddw mapval noobj
mov %r0, 0
lddw %r1, map_value[0]+8
mov %r0, 0
exit
