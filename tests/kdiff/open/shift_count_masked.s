# kdiff case (open: not run by ctest): the shift count r2 = 0xffffffffb6368179 is masked to 57 by the ISA (and by our interpreter and JIT), so r3 = u16 << 57 is 0 or at least 2^57 and jge r3, 0x7fffffff not taken leaves r3 = 0: a zero-length ringbuf_output. The kernel makes a shift by a count that may be 64 or more unknown. Sound; the generator masks its shift counts (docs/verifier.md, Where the kernel cannot judge) and a shrunk program can lose the mask (the shrinker removes instructions while the class holds). Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xd3af739fb68baefb.
# seed: 0xd3af739fb68baefb
# kernel: refuse: R3 unbounded memory access, use 'var &= const' or 'if (var < const)'
mov %r6, %r1                            # 0
mov %r8, 0                              # 1
mov %r9, 0xb6368179                     # 2
ldxh %r3, [%r6+16]                      # 3
mov %r2, %r9                            # 4
lsh %r3, %r2                            # 5
mov %r2, 0x7fffffff                     # 6
jge %r3, %r2, +5                        # 7
lddw %r1, map[4]                        # 8
mov %r2, %r10                           # 10
mov %r4, 0                              # 11
call 130                                # 12
mov %r0, %r8                            # 13
exit                                    # 14
