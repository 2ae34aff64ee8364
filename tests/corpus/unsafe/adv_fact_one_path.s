# EXPECT: memory access through a non-pointer
# adversarial case (second pass): fact_one_path
# the fact holds on one incoming path only
mov %r0, 0
ldxw %r2, [%r1+24]
ldxw %r3, [%r1+28]
ldxw %r4, [%r1+32]
jeq %r4, 0, skip
jgt %r2, %r3, out
skip:
jgt %r2, %r3, bad
out:
mov %r0, 0
exit
bad:
ldxb %r0, [%r3+0]
mov %r0, 0
exit
