/*
 * ctl_watch.c - policy file watching (see ctl_watch.h).
 *
 * Directories are watched rather than files, because deployment tools and
 * editors replace a file by renaming a new one over it (a watch on the old
 * inode would go quiet).  A change starts a 100 ms settling pause (more
 * events for the same deployment are absorbed), which also measures how
 * fast the communicators advance; the new image then activates at the
 * highest current call number plus one second of calls (plus 1000), so
 * every communicator of this process switches on an agreed call.  Across
 * processes nothing is agreed: for multi-process jobs use
 * `ncclbpf reload all --sync` (or --at-call across nodes) instead.
 */
#include "ctl_watch.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "ctl_handlers.h"
#include "host/host.h"
#include "runtime/error.h"

#define WATCH_MAX 16

struct nbpf_ctl_watch {
	int fd;
	char *spec;
	char *names[WATCH_MAX];  /* basenames of the watched objects */
	int n_names;
	uint64_t reloads, failures;
};

int nbpf_ctl_watch_fd(const struct nbpf_ctl_watch *w)
{
	return w->fd;
}

void nbpf_ctl_watch_close(struct nbpf_ctl_watch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (int i = 0; i < w->n_names; i++)
		free(w->names[i]);
	free(w->spec);
	free(w);
}

int nbpf_ctl_watch_open(const char *spec, struct nbpf_ctl_watch **out)
{
	struct nbpf_ctl_watch *w = calloc(1, sizeof(*w));
	char *copy = NULL, *save = NULL;
	int err = 0;

	*out = NULL;
	if (!w || !(w->spec = strdup(spec)) || !(copy = strdup(spec))) {
		err = nbpf_err(-ENOMEM, "watch: out of memory");
		goto fail;
	}
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		err = nbpf_err(-errno, "watch: inotify: %s", strerror(errno));
		goto fail;
	}
	for (char *p = strtok_r(copy, ":", &save); p && w->n_names < WATCH_MAX;
	     p = strtok_r(NULL, ":", &save)) {
		char d[PATH_MAX], b[PATH_MAX];

		snprintf(d, sizeof(d), "%s", p);
		snprintf(b, sizeof(b), "%s", p);
		if (inotify_add_watch(w->fd, dirname(d), IN_CLOSE_WRITE | IN_MOVED_TO) < 0) {
			err = nbpf_err(-errno, "watch: %s: %s", d, strerror(errno));
			goto fail;
		}
		if (!(w->names[w->n_names++] = strdup(basename(b)))) {
			err = nbpf_err(-ENOMEM, "watch: out of memory");
			goto fail;
		}
	}
	free(copy);
	*out = w;
	return 0;
fail:
	free(copy);
	nbpf_ctl_watch_close(w);
	return err;
}

/* Drains the queue; true if an event named one of our files. */
static bool drain(struct nbpf_ctl_watch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool hit = false;
	ssize_t n;

	while ((n = read(w->fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			for (int i = 0; ev->len && i < w->n_names; i++)
				hit |= !strcmp(ev->name, w->names[i]);
			p += sizeof(*ev) + ev->len;
		}
	}
	return hit;
}

void nbpf_ctl_watch_event(void *arg)
{
	struct nbpf_ctl_watch *w = arg;
	char errmsg[NBPF_HOST_ERRLEN];
	uint64_t before, after, at;
	int err;

	if (!drain(w))
		return;
	before = nbpf_ctl_max_calls();
	usleep(100 * 1000);
	drain(w);
	after = nbpf_ctl_max_calls();
	at = after + (after - before) * 10 + 1000;
	err = nbpf_ctl_reload(w->spec, at, 0, NULL, errmsg, sizeof(errmsg));
	if (err) {
		w->failures++;
		nbpf_host_log(NBPF_NCCL_LOG_WARN, NBPF_NCCL_INIT,
			      "%s changed but was not reloaded, the current policy stays: %s",
			      w->spec, errmsg);
		return;
	}
	w->reloads++;
}
