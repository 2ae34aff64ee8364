/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_plugin.h - the control plane inside the plugin: the control socket's
 * thread and, with NCCLBPF_WATCH=1, the policy file watch.  The plugin
 * entry (src/nccl/plugin.c) starts it after the first host acquire and
 * stops it before the last release; the host does not know it exists.
 */
#ifndef NCCLBPF_CTL_PLUGIN_H
#define NCCLBPF_CTL_PLUGIN_H

/*
 * Starts the socket thread (and the watch); called with no host lock held,
 * after the policy is loaded.  0, also when NCCLBPF_CTL=0 disables it, or
 * a negative errno (logged; harmless: the policy just cannot be reloaded).
 */
int nbpf_ctl_start(void);
/* Joins the thread (a request in progress finishes first) and removes the socket. */
void nbpf_ctl_stop(void);

/* NULL-terminated: the NCCLBPF_* settings the control plane reads. */
extern const char *const nbpf_ctl_settings[];

#endif
