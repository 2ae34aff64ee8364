/*
 * emu_cli.h - what `ncclbpf sim` and `ncclbpf bench` share: finding the
 * plugin library and loading it with a policy through the emulator.
 */
#ifndef NCCLBPF_EMU_CLI_H
#define NCCLBPF_EMU_CLI_H

#include <stddef.h>

#include "emu.h"

/*
 * Path of libnccl-ncclbpf.so: $NCCLBPF_PLUGIN, else next to the running
 * executable.  0 or -ENOENT.
 */
int emu_cli_plugin_path(char *out, size_t n);

/*
 * Opens the tuner (newest version up to max_version) with NCCLBPF_POLICY =
 * policy (NULL: none) and creates one context.  Whether the policy loaded
 * is read from the plugin's load status (ncclbpf/status.h).  The plugin's
 * WARN lines are kept in warn (may be NULL) for the caller to show.
 * Returns 0, -ENOENT when the library cannot be loaded, -EINVAL when the
 * policy was refused (warn then holds only why: the loader's or the
 * verifier's message).
 */
int emu_cli_tuner_open(struct emu_plugin *pl, struct emu_tuner *t, const char *policy,
		       int max_version, const struct emu_topo *topo, char *warn, size_t warnlen);
void emu_cli_tuner_close(struct emu_plugin *pl, struct emu_tuner *t);

#endif
