/*
 * ctl_watch.h - NCCLBPF_WATCH=1: reload the policy when one of its object
 * files changes, on the control thread, with the same rules as
 * `ncclbpf reload --sync` inside this process.
 */
#ifndef NCCLBPF_CTL_WATCH_H
#define NCCLBPF_CTL_WATCH_H

struct nbpf_ctl_watch;

/* Watches the directories of spec's objects (':'-separated).  0 or a negative errno. */
int nbpf_ctl_watch_open(const char *spec, struct nbpf_ctl_watch **out);
/* The inotify descriptor to poll. */
int nbpf_ctl_watch_fd(const struct nbpf_ctl_watch *w);
/* Called when the descriptor is readable: reloads if a watched file changed. */
void nbpf_ctl_watch_event(void *w);
void nbpf_ctl_watch_close(struct nbpf_ctl_watch *w);

#endif
