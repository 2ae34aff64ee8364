# EXPECT: call chain too deep
# adversarial case: stack deep frames
mov %r0, 0
call local a
exit
a:
stdw [%r10-512], 0
call local b
exit
b:
stdw [%r10-512], 0
call local c
exit
c:
stdw [%r10-512], 0
call local d
exit
d:
stdw [%r10-512], 0
call local e
exit
e:
stdw [%r10-512], 0
call local g
exit
g:
stdw [%r10-512], 0
call local h
exit
h:
stdw [%r10-512], 0
call local i
exit
i:
stdw [%r10-512], 0
mov %r0, 0
exit
