/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netloss.h - induced packet loss for tests that need real TCP
 * retransmits (netem is not available everywhere): loopback brought up in
 * the caller's (fresh) network namespace with a 1500-byte MTU, and a tc
 * program that drops a share of the data packets.  Header-only.
 */
#ifndef NCCLBPF_TEST_NETLOSS_H
#define NCCLBPF_TEST_NETLOSS_H

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* skb->len >= 200 and pct% of the time: TC_ACT_SHOT; else TC_ACT_OK.  SYNs and ACKs pass. */
static inline int netloss_drop_prog(int pct)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = 6, .src_reg = 1, .off = 0 }, /* len */
		{ .code = BPF_JMP | BPF_JLT | BPF_K, .dst_reg = 6, .off = 5, .imm = 200 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_prandom_u32 },
		{ .code = BPF_ALU64 | BPF_MOD | BPF_K, .dst_reg = 0, .imm = 100 },
		{ .code = BPF_JMP | BPF_JGE | BPF_K, .dst_reg = 0, .off = 2, .imm = pct },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 2 },
		{ .code = BPF_JMP | BPF_EXIT },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "obs_test_drop", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
}

/* lo up, MTU 1500: many packets in flight, so losses are repaired by fast retransmit. */
static inline int netloss_lo_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0), err = 0;

	if (s < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ifr.ifr_mtu = 1500;
	if (ioctl(s, SIOCSIFMTU, &ifr))
		err = -errno;
	ioctl(s, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr))
		err = -errno;
	close(s);
	return err;
}

#endif
