# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# A 32-bit copy of a value whose upper half is known zero (r3 = r2;
# w3 += 0, as compilers zero-extend a u32) stays linked to it: no value
# wraps, so the 32-bit sum is the 64-bit one (delta 0), and the check on
# r3 bounds r2.  (Refused before: every 32-bit ALU write ended the link.)
# Near miss: unsafe/links_delta32_wrap.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
mov32 %r2, %r2
mov %r3, %r2
add32 %r3, 0
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
