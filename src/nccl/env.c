/*
 * env.c - NCCL env plugin v1/v2: serves NCCL variables from the policy
 * objects' ncclbpf_env tables (host_env.h), else from the real environment.
 *
 * NCCL requires a returned string to stay valid until the next getEnv for
 * the same name or finalize.  Each name gets its own slot with two buffers
 * used alternately, so the string returned last time is never overwritten
 * by the next call for that name; slots are never freed before finalize.
 * Policy values are copied out of the image, so a reload cannot free them
 * under NCCL.  Init never fails for policy problems.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_env.h"
#include "host/host.h"
#include "plugin.h"

#define ENV_SLOTS  256
#define ENV_VALLEN 1024

struct env_slot {
	char name[128];
	char val[2][ENV_VALLEN];
	int cur;
};

static pthread_mutex_t g_env_lock = PTHREAD_MUTEX_INITIALIZER;
static struct env_slot *g_slots; /* ENV_SLOTS of them, under g_env_lock */
static bool g_env_up;

static nbpf_nccl_result_t env_init_common(nbpf_nccl_logger_t logger)
{
	pthread_mutex_lock(&g_env_lock);
	if (!g_env_up) {
		g_slots = calloc(ENV_SLOTS, sizeof(*g_slots));
		nbpf_plugin_acquire(logger);
		g_env_up = true;
	}
	pthread_mutex_unlock(&g_env_lock);
	return NBPF_NCCL_SUCCESS;
}

static nbpf_nccl_result_t env_init_v1(uint8_t major, uint8_t minor, uint8_t patch,
				      const char *suffix)
{
	(void)major; (void)minor; (void)patch; (void)suffix;
	return env_init_common(NULL);
}

static nbpf_nccl_result_t env_init_v2(uint8_t major, uint8_t minor, uint8_t patch,
				      const char *suffix, nbpf_nccl_logger_t logger)
{
	(void)major; (void)minor; (void)patch; (void)suffix;
	return env_init_common(logger);
}

static nbpf_nccl_result_t env_finalize(void)
{
	pthread_mutex_lock(&g_env_lock);
	if (g_env_up) {
		free(g_slots);
		g_slots = NULL;
		g_env_up = false;
		nbpf_plugin_release();
	}
	pthread_mutex_unlock(&g_env_lock);
	return NBPF_NCCL_SUCCESS;
}

/*
 * Policy override first, then getenv.  Names or values that do not fit a
 * slot fall back to getenv's own pointer (valid as long as the environment
 * is not modified, which is what NCCL's internal default relies on too).
 */
static const char *env_get(const char *name)
{
	char buf[ENV_VALLEN];
	const char *v, *ret = NULL;
	struct env_slot *s = NULL;

	if (!name)
		return NULL;
	pthread_mutex_lock(&g_env_lock);
	if (!g_env_up || !g_slots || strlen(name) >= sizeof(g_slots[0].name)) {
		pthread_mutex_unlock(&g_env_lock);
		return getenv(name);
	}
	v = nbpf_host_env_lookup(name, buf, sizeof(buf));
	if (!v) {
		pthread_mutex_unlock(&g_env_lock);
		return getenv(name);
	}
	for (int i = 0; i < ENV_SLOTS; i++) {
		if (!g_slots[i].name[0]) {
			s = &g_slots[i];
			strcpy(s->name, name);
			break;
		}
		if (!strcmp(g_slots[i].name, name)) {
			s = &g_slots[i];
			break;
		}
	}
	if (s) {
		s->cur ^= 1;
		snprintf(s->val[s->cur], ENV_VALLEN, "%s", v);
		ret = s->val[s->cur];
	}
	pthread_mutex_unlock(&g_env_lock);
	return ret ? ret : getenv(name);
}

NBPF_EXPORT const nbpf_env_v1_t ncclEnvPlugin_v1 = {
	.name = "ncclbpf", .init = env_init_v1, .finalize = env_finalize, .getEnv = env_get,
};
NBPF_EXPORT const nbpf_env_v2_t ncclEnvPlugin_v2 = {
	.name = "ncclbpf", .init = env_init_v2, .finalize = env_finalize, .getEnv = env_get,
};
