/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe_cli.h - the observe verb's parts: the processes it watches
 * (observe_procs.c: found through control sockets, labelled with their
 * ranks, their collective P99) and its output (observe_view.c: the live
 * table and the JSON samples).
 */
#ifndef NCCLBPF_OBSERVE_CLI_H
#define NCCLBPF_OBSERVE_CLI_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "control/ctl_tele.h"
#include "observe.h"
#include "repin.h"

/* A process being watched: its labels and its plugin telemetry, if it runs the plugin. */
struct proc {
	int pid;
	uid_t uid;
	char comm[32];
	char sock[4200];      /* control socket, "" when not a plugin process */
	char ranks[256];      /* "0/8@0x1234...,..." */
	struct nbpf_tele_set tele_prev;
	bool tele_seen;
	double nccl_p99_ns;
	uint64_t nccl_calls;
	char prom_labels[320];
	/* Resident memory per NUMA node (numa_maps, read every few seconds); nodes seen, < 0 unread. */
	uint64_t mem[OBS_NUMA_NODES];
	int mem_nodes;
	double mem_read_s;
};

struct obs_state {
	struct cli *cli;
	struct proc *procs;
	size_t n_procs;
	bool auto_mode;
	/* Outliers of the current interval. */
	struct obs_event ev[64];
	size_t n_ev;
	uint64_t ev_dropped;
	/* --pin-numa: closed loop 3, NULL when off. */
	struct nbpf_repin *repin;
	/* --deep-when: whether the deep tier's window is open. */
	bool deep, deep_on;
	/* obs_discover: find the sockets only, without asking each process its ranks. */
	bool no_labels;
	/* Processes that exited during the interval (reported once, then dropped). */
	int exited[64];
	size_t n_exited;
};

/* observe_procs.c */
struct proc *obs_proc_find(struct obs_state *s, int pid);
/* The process's entry, added (with its name) if new; NULL on allocation failure. */
struct proc *obs_proc_add(struct obs_state *s, int pid);
/* One control-socket exchange with p, under p's owner's uid when we are root. */
int obs_proc_call(struct proc *p, int type, struct nbpf_ctl_msg *m);
/* Adds every live process with a control socket (as root, every user's). */
void obs_discover(struct obs_state *s);
/* Ranks and communicators of a plugin process, asked again (communicators come and go). */
void obs_proc_labels(struct proc *p);
/* Re-reads the process's name (an exec changes it). */
void obs_proc_refresh(struct proc *p);
/* Whether the process has exited (gone, or a zombie). */
bool obs_proc_gone(int pid);
/* Gives every watched process that runs the plugin its socket and ranks. */
void obs_join_plugins(struct obs_state *s);
/* Collective P99 and count of p since the last call, from its telemetry. */
void obs_proc_nccl(struct proc *p);
/* Adds the processes the kernel's tables name (cgroup and comm targets). */
void obs_procs_from_snap(struct obs_state *s, const struct nbpf_obs_snap *d);

/*
 * --pin-numa: every thread of every watched process, on the CPU it last ran
 * on, to the re-pinner (new threads get their home, off-home ones move).
 */
void obs_repin_scan(struct obs_state *s, double now_s);
/* One migration event: a thread crossed to another node. */
void obs_repin_event(struct obs_state *s, const struct obs_event *e, double now_s);

/* observe_deep.c: the deep tier switched by Alertmanager (POST /deep). */
struct obs_deep_hook {
	_Atomic int request;      /* from the HTTP thread: 1 firing, 2 resolved, 0 none */
	double window_s;          /* how long a firing notification holds it on */
	uint64_t budget;          /* records per second */
	double until;             /* mono time the window ends; 0: off */
	struct MHD_Daemon *daemon; /* observe --deep-listen's own server */
};
/* Serves one POST /deep (libmicrohttpd's access handler arguments). */
enum MHD_Result obs_deep_hook_serve(struct obs_deep_hook *h, struct MHD_Connection *conn,
				    const char *upload, size_t *upload_size, void **con_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: frees a notification body a client abandoned. */
void obs_deep_hook_done(void *cls, struct MHD_Connection *conn, void **con_cls,
			enum MHD_RequestTerminationCode toe);
/* Applies what the webhook asked for since the last call; whether the deep tier is on. */
int obs_deep_hook_apply(struct obs_deep_hook *h, struct nbpf_obs *obs);
/* observe --deep-listen ADDR:PORT: a receiver of its own; 0, or < 0 on a bad address or bind. */
int obs_deep_hook_listen(struct obs_deep_hook *h, const char *addr);
void obs_deep_hook_close(struct obs_deep_hook *h);

/* observe_view.c */
/* "block", "runq", ...: an outlier's kind as the output names it. */
const char *obs_event_kind_name(uint32_t kind);
/* One line per set that is not attached, misses signals, or took a fallback. */
void obs_print_status(struct nbpf_obs *obs, FILE *f);
void obs_print_json(struct obs_state *s, struct nbpf_obs *obs, const struct nbpf_obs_snap *d,
		    double secs, int iter);
void obs_print_table(struct obs_state *s, const struct nbpf_obs_snap *d, double secs, int iter);

#endif
