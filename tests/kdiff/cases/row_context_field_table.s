# kdiff case: one 8-byte load of two adjacent readable context fields
# seed: 0x0
# kernel: refuse: invalid bpf_context access off=0 size=8
# row: context-field-table
ldxdw %r0, [%r1+0]
exit
