/*
 * unload.c - what the plugin frees when it is unmapped (dlclose) or the
 * process exits, beyond what the last nbpf_host_release already freed.
 *
 * The runtime keeps a few process-wide caches that outlive any one image:
 * the verifier's write-set cache (keyed by object content, so a reload of
 * the same objects skips the discovery).  After dlclose nothing can reach
 * them, so they must go with the library.  A destructor rather than
 * atexit: an atexit handler would point into unmapped code after dlclose.
 * The runtime's own epoch state is freed by epoch.c's destructor.
 */
#include "verifier/verifier.h"

__attribute__((destructor)) static void plugin_unload(void)
{
	nbpf_verify_cache_flush();
}
