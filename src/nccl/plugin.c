/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin.c - acquires the host and starts the control plane for the
 * adapters (see plugin.h).
 *
 * The lock serialises the first acquire and the last release with each
 * other, so a context created while the last one is finalized never sees a
 * host whose control thread is being stopped.  It is held while the control
 * thread starts and is joined; that thread takes the host lock, never this
 * one.
 */
#include "plugin.h"

#include <pthread.h>
#include <stdbool.h>

#include "control/ctl_plugin.h"
#include "host/host.h"

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static int plugin_refs;   /* under plugin_lock */
static bool ctl_running;  /* under plugin_lock */

void nbpf_plugin_acquire(nbpf_nccl_logger_t logger)
{
	pthread_mutex_lock(&plugin_lock);
	nbpf_host_acquire(logger, nbpf_ctl_settings);
	if (plugin_refs++ == 0) {
		int err = nbpf_ctl_start();

		/* On failure nbpf_ctl_start has said why, once. */
		ctl_running = !err;
	}
	pthread_mutex_unlock(&plugin_lock);
}

void nbpf_plugin_release(void)
{
	pthread_mutex_lock(&plugin_lock);
	if (plugin_refs <= 0) {
		pthread_mutex_unlock(&plugin_lock);
		return;
	}
	if (--plugin_refs == 0 && ctl_running) {
		nbpf_ctl_stop();
		ctl_running = false;
	}
	nbpf_host_release();
	pthread_mutex_unlock(&plugin_lock);
}
