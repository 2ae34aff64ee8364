/*
 * ctl_plugin.c - the plugin's control plane: the control socket's thread,
 * started by the plugin entry (src/nccl/plugin.c) after the host is first
 * acquired, answering requests from the host's registry and images.
 * Everything here runs on the control thread; the hot path only ever sees
 * the result of nbpf_host_publish.
 *
 * Settings: NCCLBPF_CTL=0 disables the socket; NCCLBPF_CTL_DIR and
 * NCCLBPF_CTL_TIMEOUT_MS override the directory and the per-connection
 * deadline; NCCLBPF_WATCH=1 reloads the policy when its files change.
 */
#include "ctl_plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_handlers.h"
#include "ctl_server.h"
#include "ctl_watch.h"
#include "host/host.h"
#include "runtime/error.h"

const char *const nbpf_ctl_settings[] = {
	"NCCLBPF_CTL", "NCCLBPF_CTL_DIR", "NCCLBPF_CTL_TIMEOUT_MS", "NCCLBPF_WATCH", NULL,
};

static struct nbpf_ctl_server *ctl_srv;
static struct nbpf_ctl_watch *ctl_watch;

static int ctl_handler(void *user, const struct nbpf_ctl_msg *req, struct nbpf_ctl_buf *resp,
		       char *errmsg, size_t errlen)
{
	return nbpf_ctl_handle(req, resp, errmsg, errlen);
}

int nbpf_ctl_start(void)
{
	struct nbpf_ctl_server_opts opts = { .handler = ctl_handler };
	const struct nbpf_settings *set = nbpf_host_settings();
	int err;

	if (ctl_srv)
		return 0;
	if (!nbpf_host_setting_bool("NCCLBPF_CTL", true))
		return 0;
	opts.client_timeout_ms =
		(int)nbpf_host_setting_int("NCCLBPF_CTL_TIMEOUT_MS", 1, 3600 * 1000, 2000);
	if (nbpf_host_setting_bool("NCCLBPF_WATCH", false) && set && set->policy[0]) {
		if (nbpf_ctl_watch_open(set->policy, &ctl_watch))
			nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
				      "NCCLBPF_WATCH ignored: %s", ncclbpf_errmsg());
		else {
			opts.extra_fd = nbpf_ctl_watch_fd(ctl_watch);
			opts.on_extra = nbpf_ctl_watch_event;
			opts.user = ctl_watch;
		}
	}
	err = nbpf_ctl_server_start(&opts, &ctl_srv);
	if (err) {
		nbpf_ctl_watch_close(ctl_watch);
		ctl_watch = NULL;
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "control socket disabled (policies run, but cannot be reloaded or inspected): %s",
			      ncclbpf_errmsg());
		return err;
	}
	nbpf_host_log(NBPF_NCCL_LOG_INFO, NBPF_NCCL_INIT, "control socket %s%s%s",
		      nbpf_ctl_server_path(ctl_srv), ctl_watch ? ", watching " : "",
		      ctl_watch ? set->policy : "");
	return 0;
}

void nbpf_ctl_stop(void)
{
	nbpf_ctl_server_stop(ctl_srv);
	ctl_srv = NULL;
	nbpf_ctl_watch_close(ctl_watch);
	ctl_watch = NULL;
}

/*
 * Safety net for a dlclose without a final release: the thread must be
 * joined before the code it runs is unmapped.  A destructor, not atexit,
 * so nothing is left pointing into the library once it is gone.
 */
__attribute__((destructor)) static void ctl_unload(void)
{
	nbpf_ctl_stop();
}
