/*
 * host_env.h - reads a policy object's NCCL variable overrides.
 *
 * A policy declares them as one global string of "NAME=VALUE" lines:
 *
 *     const char ncclbpf_env[] = "NCCL_ALGO=Ring\nNCCL_PROTO=Simple\n";
 *
 * The string is read straight from the object file's symbol table (it need
 * not be referenced by any program), so an object may hold only overrides.
 */
#ifndef NCCLBPF_HOST_ENV_H
#define NCCLBPF_HOST_ENV_H

#include <stddef.h>

struct nbpf_image;

#define NBPF_ENV_SYMBOL "ncclbpf_env"

/*
 * Appends the overrides of the object file whose bytes are buf/len (path
 * names it in messages) to img->env (names already there win: the
 * first object in NCCLBPF_POLICY decides).  Returns 0 when the object has
 * none; a negative errno and errbuf for a malformed table (a name that is
 * not NCCL_[A-Z0-9_]+, a line without '=', a value with control bytes,
 * more than NBPF_HOST_MAX_ENV entries).
 */
int nbpf_env_read_overrides(const char *path, const void *buf, size_t len,
			    struct nbpf_image *img, char *errbuf, size_t errlen);

#endif
