# EXPECT: pointer stored into map value
# adversarial case: cmpxchg ptr r0
mov %r0, 0
stdw [%r10-8], 0
mov %r0, %r1
mov %r2, 0
lock cmpxchg [%r10-8], %r2
mov %r0, 0
exit
