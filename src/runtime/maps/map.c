/*
 * map.c - map creation, opening another process's map, reference counts,
 * accessors and the host API dispatch.  Types live in array.c, htab.c and
 * ringbuf.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "error.h"
#include "lock.h"
#include "map_impl.h"

/* Kernel map_flags we accept (all are hints here: maps are always preallocated). */
#define NBPF_KNOWN_MAP_FLAGS (1u /* NO_PREALLOC */ | 2u /* NO_COMMON_LRU */ | 4u /* NUMA_NODE */ | \
			      0x40u /* ZERO_SEED */ | 0x80u /* RDONLY_PROG */ | 0x400u /* MMAPABLE */)
#define NBPF_F_RDONLY_PROG 0x80u

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

const char *ncclbpf_map_type__name(uint64_t type)
{
	switch (type) {
	case NCCLBPF_MAP_HASH: return "hash";
	case NCCLBPF_MAP_ARRAY: return "array";
	case NCCLBPF_MAP_PERCPU_HASH: return "percpu_hash";
	case NCCLBPF_MAP_PERCPU_ARRAY: return "percpu_array";
	case NCCLBPF_MAP_LRU_HASH: return "lru_hash";
	case NCCLBPF_MAP_RINGBUF: return "ringbuf";
	}
	return NULL;
}

static const char *type_name(enum ncclbpf_map_type t)
{
	const char *name = ncclbpf_map_type__name(t);

	return name ? name : "unknown";
}

/*
 * Computes every region's size from the shape.  All arithmetic is
 * overflow-checked; shapes the kernel would refuse, or whose file would
 * exceed NBPF_MAP_MAX_BYTES, get -EINVAL/-E2BIG with a message.
 */
int nbpf_map_layout(enum ncclbpf_map_type type, uint32_t ks, uint32_t vs, uint32_t max,
		    uint32_t page, struct nbpf_map_layout *lay)
{
	uint64_t x, elem;

	memset(lay, 0, sizeof(*lay));
	lay->data_off = round_up(sizeof(struct nbpf_shm_hdr), page);
	lay->nr_slots = (type == NCCLBPF_MAP_PERCPU_ARRAY || type == NCCLBPF_MAP_PERCPU_HASH) ?
			NCCLBPF_NR_SLOTS : 1;
	switch (type) {
	case NCCLBPF_MAP_ARRAY:
	case NCCLBPF_MAP_PERCPU_ARRAY:
	case NCCLBPF_MAP_HASH:
	case NCCLBPF_MAP_PERCPU_HASH:
	case NCCLBPF_MAP_LRU_HASH:
		if (max == 0)
			return nbpf_err(-EINVAL, "%s map: max_entries must be at least 1", type_name(type));
		if (vs == 0)
			return nbpf_err(-EINVAL, "%s map: value_size must be at least 1", type_name(type));
		if (vs > (lay->nr_slots > 1 ? NBPF_MAP_MAX_PERCPU_VALUE : NBPF_MAP_MAX_VALUE))
			return nbpf_err(-E2BIG, "%s map: value_size %u exceeds the limit of %u",
					type_name(type), vs,
					lay->nr_slots > 1 ? NBPF_MAP_MAX_PERCPU_VALUE : NBPF_MAP_MAX_VALUE);
		lay->value_stride = (uint32_t)round_up(vs, 8);
		break;
	case NCCLBPF_MAP_RINGBUF:
		if (ks || vs)
			return nbpf_err(-EINVAL, "ringbuf map: key_size and value_size must be 0 (got %u, %u)",
					ks, vs);
		if (max < page || (max & (max - 1)) || max % page)
			return nbpf_err(-EINVAL, "ringbuf map: max_entries %u must be a power of two and a multiple of the page size (%u)",
					max, page);
		if (max > (1u << 30))
			return nbpf_err(-E2BIG, "ringbuf map: %u bytes exceeds the limit of 1 GiB", max);
		lay->data_size = max;
		lay->total_size = lay->data_off + max;
		return 0;
	default:
		return nbpf_err(-EINVAL, "unsupported map type %d", (int)type);
	}

	if (type == NCCLBPF_MAP_ARRAY || type == NCCLBPF_MAP_PERCPU_ARRAY) {
		if (ks != 4)
			return nbpf_err(-EINVAL, "%s map: key_size must be 4 (got %u)", type_name(type), ks);
		lay->key_stride = 4;
		if (__builtin_mul_overflow((uint64_t)max, (uint64_t)lay->nr_slots, &x) ||
		    __builtin_mul_overflow(x, (uint64_t)lay->value_stride, &lay->data_size))
			goto too_big;
		lay->aux_off = round_up(lay->data_off + lay->data_size, 64);
		lay->aux_size = (uint64_t)max * sizeof(nbpf_lock_t);
	} else {
		if (ks == 0 || ks > NBPF_MAP_MAX_KEY)
			return nbpf_err(-EINVAL, "%s map: key_size %u must be 1..%u", type_name(type), ks,
					NBPF_MAP_MAX_KEY);
		if (max > (1u << 28))
			goto too_big;
		lay->key_stride = (uint32_t)round_up(ks, 8);
		lay->n_buckets = 1;
		while (lay->n_buckets < max)
			lay->n_buckets <<= 1;
		/* Spare elements absorb deletes waiting for their grace period. */
		lay->pool_size = max + (max / 4 > 16 ? max / 4 : 16);
		if (__builtin_mul_overflow((uint64_t)lay->nr_slots, (uint64_t)lay->value_stride, &x) ||
		    __builtin_add_overflow(x, (uint64_t)NBPF_HTAB_ELEM_HDR + lay->key_stride, &elem) ||
		    elem > UINT32_MAX)
			goto too_big;
		lay->elem_size = (uint32_t)elem;
		if (__builtin_mul_overflow(elem, (uint64_t)lay->pool_size, &lay->data_size))
			goto too_big;
		lay->aux_off = round_up(lay->data_off + lay->data_size, 64);
		lay->aux_size = (uint64_t)lay->n_buckets * sizeof(struct nbpf_htab_bucket);
	}
	if (lay->aux_off < lay->data_off || lay->aux_off + lay->aux_size < lay->aux_off)
		goto too_big;
	lay->total_size = round_up(lay->aux_off + lay->aux_size, page);
	if (lay->total_size > NBPF_MAP_MAX_BYTES)
		goto too_big;
	return 0;
too_big:
	return nbpf_err(-E2BIG, "%s map: key_size %u, value_size %u, max_entries %u needs more than the %llu-byte limit",
			type_name(type), ks, vs, max, (unsigned long long)NBPF_MAP_MAX_BYTES);
}

void nbpf_spin_pause(unsigned *spins)
{
	if (++*spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		sched_yield();
	}
}

void nbpf_copy_from_shared(void *dst, const void *shared, size_t n)
{
	const uint64_t *s = shared;
	uint8_t *d = dst;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w = __atomic_load_n(s++, __ATOMIC_ACQUIRE);

		memcpy(d + i, &w, 8);
	}
	for (; i < n; i++)
		d[i] = __atomic_load_n((const uint8_t *)shared + i, __ATOMIC_ACQUIRE);
}

void nbpf_copy_to_shared(void *shared, const void *src, size_t n)
{
	uint64_t *d = shared;
	const uint8_t *s = src;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		__atomic_store_n(d++, w, __ATOMIC_RELEASE);
	}
	for (; i < n; i++)
		__atomic_store_n((uint8_t *)shared + i, s[i], __ATOMIC_RELEASE);
}

void nbpf_zero_shared(void *shared, size_t n)
{
	uint64_t *d = shared;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		__atomic_store_n(d++, 0, __ATOMIC_RELEASE);
	for (; i < n; i++)
		__atomic_store_n((uint8_t *)shared + i, 0, __ATOMIC_RELEASE);
}

static const struct nbpf_map_ops *prog_ops(enum ncclbpf_map_type t)
{
	switch (t) {
	case NCCLBPF_MAP_ARRAY: return &nbpf_array_ops;
	case NCCLBPF_MAP_PERCPU_ARRAY: return &nbpf_percpu_array_ops;
	case NCCLBPF_MAP_HASH: return &nbpf_htab_ops;
	case NCCLBPF_MAP_PERCPU_HASH: return &nbpf_percpu_htab_ops;
	case NCCLBPF_MAP_LRU_HASH: return &nbpf_lru_htab_ops;
	case NCCLBPF_MAP_RINGBUF: return &nbpf_ringbuf_ops;
	}
	return NULL;
}

static const struct nbpf_map_host_ops *host_ops(enum ncclbpf_map_type t)
{
	switch (t) {
	case NCCLBPF_MAP_ARRAY:
	case NCCLBPF_MAP_PERCPU_ARRAY: return &nbpf_array_host_ops;
	case NCCLBPF_MAP_HASH:
	case NCCLBPF_MAP_PERCPU_HASH:
	case NCCLBPF_MAP_LRU_HASH: return &nbpf_htab_host_ops;
	case NCCLBPF_MAP_RINGBUF: return &nbpf_ringbuf_host_ops;
	}
	return NULL;
}

/*
 * Maps the file.  Ring buffers reserve header + 2 * data and map the data
 * pages twice back to back, so a record that wraps is still contiguous.
 */
static int map_file(int fd, const struct nbpf_map_layout *lay, enum ncclbpf_map_type type,
		    bool writable, struct nbpf_map_priv *priv)
{
	int prot = PROT_READ | (writable ? PROT_WRITE : 0);
	void *p;

	if (type != NCCLBPF_MAP_RINGBUF) {
		p = mmap(NULL, lay->total_size, prot, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			return nbpf_err(-errno, "mmap of %llu bytes failed: %s",
					(unsigned long long)lay->total_size, strerror(errno));
		priv->hdr = p;
		return 0;
	}
	priv->rb_span_size = lay->data_off + 2 * lay->data_size;
	p = mmap(NULL, priv->rb_span_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return nbpf_err(-errno, "ringbuf: cannot reserve address space: %s", strerror(errno));
	if (mmap(p, lay->total_size, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap((uint8_t *)p + lay->total_size, lay->data_size, prot, MAP_SHARED | MAP_FIXED, fd,
		 (off_t)lay->data_off) == MAP_FAILED) {
		int err = -errno;

		munmap(p, priv->rb_span_size);
		return nbpf_err(err, "ringbuf: cannot map data pages twice: %s", strerror(-err));
	}
	priv->rb_span = p;
	priv->hdr = p;
	priv->rb_data = (uint8_t *)p + lay->data_off;
	return 0;
}

/* Registers the whole mapping with the truncation guard (guard.c). */
static void guard_file(struct ncclbpf_map *m, struct nbpf_map_priv *priv, int fd)
{
	nbpf_map_guard_add(priv->hdr, priv->rb_span ? priv->rb_span_size : priv->lay.total_size, fd,
			   priv->lay.total_size, priv->writable, m->path);
}

static void unmap_file(struct nbpf_map_priv *priv)
{
	nbpf_map_guard_del(priv->hdr);
	if (priv->rb_span)
		munmap(priv->rb_span, priv->rb_span_size);
	else if (priv->hdr)
		munmap(priv->hdr, priv->lay.total_size);
}

/* Fills the process-local handle from a mapped, validated header. */
static int finish_handle(struct ncclbpf_map *map, struct nbpf_map_priv *priv, const char *name,
			 const char *path)
{
	const struct nbpf_shm_hdr *h = priv->hdr;

	map->ops = prog_ops((enum ncclbpf_map_type)h->type);
	map->name = strdup(name);
	map->path = path ? strdup(path) : NULL;
	if (!map->name || (path && !map->path))
		return nbpf_err(-ENOMEM, "map %s: out of memory", name);
	map->type = (enum ncclbpf_map_type)h->type;
	map->key_size = h->key_size;
	map->value_size = h->value_size;
	map->max_entries = h->max_entries;
	map->map_flags = h->map_flags;
	map->readonly_prog = h->flags & NBPF_SHM_RDONLY_PROG;
	atomic_init(&map->refcnt, 1);
	map->shm = priv->hdr;
	map->shm_size = priv->lay.total_size;
	map->value_stride = priv->lay.value_stride;
	map->array_base = map->type == NCCLBPF_MAP_ARRAY ?
			  (uint8_t *)priv->hdr + priv->lay.data_off : NULL;
	map->impl = priv;
	priv->page_shift = (uint32_t)__builtin_ctz(h->page_size);
	return 0;
}

static void free_handle(struct ncclbpf_map *map)
{
	struct nbpf_map_priv *priv = map->impl;

	if (priv) {
		nbpf_lock_handle_del(priv);
		unmap_file(priv);
		if (priv->lock_fd >= 0)
			close(priv->lock_fd);
		if (priv->holder_fd >= 0)
			close(priv->holder_fd);
		free(priv);
	}
	free(map->name);
	free(map->path);
	free(map);
}

/* Failure path of create/open: frees a half-built handle, or just priv. */
static void discard_handle(struct ncclbpf_map *m, struct nbpf_map_priv *priv)
{
	if (m) {
		m->impl = priv;
		free_handle(m);
	} else {
		free(priv);
	}
}

/*
 * Creates a map in a fresh owner-only shared-memory file.  On success *map
 * holds one reference; the file is unlinked when the last one is dropped.
 */
int ncclbpf_map__create(const char *name, enum ncclbpf_map_type type, uint32_t key_size,
			uint32_t value_size, uint32_t max_entries,
			const struct ncclbpf_map_create_opts *opts, struct ncclbpf_map **map)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE), flags = 0;
	const char *dir = NULL;
	struct ncclbpf_map *m = NULL;
	struct nbpf_map_priv *priv = NULL;
	struct nbpf_shm_hdr *h;
	char *path = NULL;
	int err, fd = -1;
	bool ro = false;

	if (!map || !name)
		return nbpf_err(-EINVAL, "ncclbpf_map__create: name and map are required");
	*map = NULL;
	if (opts) {
		if (opts->sz < offsetof(struct ncclbpf_map_create_opts, dir))
			return nbpf_err(-EINVAL, "map %s: opts->sz %zu too small", name, opts->sz);
		flags = opts->map_flags;
		if (opts->sz >= offsetof(struct ncclbpf_map_create_opts, readonly_prog) + sizeof(bool))
			ro = opts->readonly_prog;
		if (opts->sz >= offsetof(struct ncclbpf_map_create_opts, dir) + sizeof(char *))
			dir = opts->dir;
	}
	if (flags & ~NBPF_KNOWN_MAP_FLAGS)
		return nbpf_err(-EINVAL, "map %s: unsupported map_flags 0x%x", name,
				flags & ~NBPF_KNOWN_MAP_FLAGS);
	ro = ro || (flags & NBPF_F_RDONLY_PROG);

	m = calloc(1, sizeof(*m));
	priv = calloc(1, sizeof(*priv));
	if (!m || !priv) {
		err = nbpf_err(-ENOMEM, "map %s: out of memory", name);
		goto fail;
	}
	priv->lock_fd = -1;
	priv->holder_fd = -1;
	err = nbpf_map_layout(type, key_size, value_size, max_entries, page, &priv->lay);
	if (err) {
		nbpf_err(err, "map %s: %s", name, ncclbpf_errmsg());
		goto fail;
	}
	err = nbpf_shm_create(dir, name, priv->lay.total_size, &path, &fd);
	if (err)
		goto fail;
	priv->owner = true;
	priv->writable = true;
	err = map_file(fd, &priv->lay, type, true, priv);
	if (err) {
		nbpf_err(err, "map %s: %s", name, ncclbpf_errmsg());
		goto fail_unlink;
	}
	h = priv->hdr;
	h->magic = NBPF_SHM_MAGIC;
	h->version = NBPF_SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->type = type;
	h->key_size = key_size;
	h->value_size = value_size;
	h->max_entries = max_entries;
	h->map_flags = flags;
	h->flags = ro ? NBPF_SHM_RDONLY_PROG : 0;
	h->nr_slots = priv->lay.nr_slots;
	h->value_stride = priv->lay.value_stride;
	h->total_size = priv->lay.total_size;
	h->data_off = priv->lay.data_off;
	h->data_size = priv->lay.data_size;
	h->aux_off = priv->lay.aux_off;
	h->aux_size = priv->lay.aux_size;
	h->n_buckets = priv->lay.n_buckets;
	h->elem_size = priv->lay.elem_size;
	h->pool_size = priv->lay.pool_size;
	h->hash_seed = (uint32_t)((uintptr_t)h >> 12) ^ (uint32_t)getpid() * 2654435761u;
	h->owner_pid = getpid();
	h->page_size = page;
	/* The file header keeps at most NBPF_MAP_NAME_MAX bytes of the name. */
	strncpy(h->name, name, NBPF_MAP_NAME_MAX);
	err = finish_handle(m, priv, name, path);
	if (err)
		goto fail_unlink;
	if (host_ops(type)->init) {
		err = host_ops(type)->init(m);
		if (err)
			goto fail_unlink;
	}
	priv->lock_fd = fd;
	guard_file(m, priv, fd);
	nbpf_lock_handle_add(priv);
	/* Claim a lock holder slot now rather than on a program's first update
	 * (a failure is retried there). */
	nbpf_lock_holder_id(m);
	free(path);
	*map = m;
	return 0;
fail_unlink:
	unlink(path);
fail:
	if (fd >= 0)
		close(fd);
	free(path);
	discard_handle(m, priv);
	return err;
}

/* Header fields a reader must agree with before trusting any offset. */
static int check_header(const char *path, const struct nbpf_shm_hdr *h, uint64_t file_size,
			struct nbpf_map_layout *lay)
{
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
	int err;

	if (h->magic != NBPF_SHM_MAGIC)
		return nbpf_err(-EINVAL, "%s: not an ncclbpf map file (bad magic)", path);
	if (h->version != NBPF_SHM_VERSION || h->hdr_size != sizeof(*h))
		return nbpf_err(-EPROTO, "%s: map file version %u (header %u bytes), expected %u (%zu)",
				path, h->version, h->hdr_size, NBPF_SHM_VERSION, sizeof(*h));
	if (h->page_size != page)
		return nbpf_err(-EINVAL, "%s: created with page size %u, this process has %u", path,
				h->page_size, page);
	err = nbpf_map_layout((enum ncclbpf_map_type)h->type, h->key_size, h->value_size,
			      h->max_entries, page, lay);
	if (err)
		return nbpf_err(err, "%s: inconsistent header: %s", path, ncclbpf_errmsg());
	if (h->total_size != lay->total_size || file_size != lay->total_size ||
	    h->data_off != lay->data_off || h->data_size != lay->data_size ||
	    h->aux_off != lay->aux_off || h->aux_size != lay->aux_size ||
	    h->n_buckets != lay->n_buckets || h->elem_size != lay->elem_size ||
	    h->pool_size != lay->pool_size || h->nr_slots != lay->nr_slots ||
	    h->value_stride != lay->value_stride)
		return nbpf_err(-EINVAL, "%s: header sizes do not match its shape (file %llu bytes)",
				path, (unsigned long long)file_size);
	return 0;
}

/*
 * Opens a map created by any process of this user.  The file must be a
 * regular file owned by us with no group/other access and a header that
 * matches its size; then it is mapped read-only or writable.  A map opened
 * this way is never unlinked by us and never recycles hash elements (only
 * the creating process knows when its programs are done with them).
 */
int ncclbpf_map__open_path(const char *path, bool writable, struct ncclbpf_map **map)
{
	struct nbpf_shm_hdr h;
	struct ncclbpf_map *m = NULL;
	struct nbpf_map_priv *priv = NULL;
	struct stat st;
	const char *base;
	int err, fd;

	if (!path || !map)
		return nbpf_err(-EINVAL, "ncclbpf_map__open_path: path and map are required");
	*map = NULL;
	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return nbpf_err(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		err = nbpf_err(-errno, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		err = nbpf_err(-EPERM, "%s: refusing a map file that is not a regular file owned by uid %u with mode 0600",
			       path, (unsigned)geteuid());
		goto fail;
	}
	if ((uint64_t)st.st_size < sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		err = nbpf_err(-EINVAL, "%s: too short for a map header", path);
		goto fail;
	}
	m = calloc(1, sizeof(*m));
	priv = calloc(1, sizeof(*priv));
	if (!m || !priv) {
		err = nbpf_err(-ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	priv->lock_fd = -1;
	priv->holder_fd = -1;
	err = check_header(path, &h, (uint64_t)st.st_size, &priv->lay);
	if (err)
		goto fail;
	priv->writable = writable;
	err = map_file(fd, &priv->lay, (enum ncclbpf_map_type)h.type, writable, priv);
	if (err)
		goto fail;
	/* Re-check what we mapped: the file could have changed after pread. */
	if (memcmp(priv->hdr, &h, offsetof(struct nbpf_shm_hdr, free_head))) {
		err = nbpf_err(-EINVAL, "%s: header changed while opening", path);
		goto fail;
	}
	h.name[NBPF_MAP_NAME_MAX] = '\0';
	base = h.name[0] ? h.name : path;
	err = finish_handle(m, priv, base, path);
	if (err)
		goto fail;
	/* Kept open: lock holders' liveness is asked through it (lock.c). */
	priv->lock_fd = fd;
	guard_file(m, priv, fd);
	nbpf_lock_handle_add(priv);
	nbpf_lock_holder_id(m);
	*map = m;
	return 0;
fail:
	close(fd);
	discard_handle(m, priv);
	return err;
}

struct ncclbpf_map *ncclbpf_map__get(struct ncclbpf_map *map)
{
	if (map)
		atomic_fetch_add_explicit(&map->refcnt, 1, memory_order_relaxed);
	return map;
}

/* Dropping the last reference unmaps the file and, in the creator, unlinks it. */
void ncclbpf_map__put(struct ncclbpf_map *map)
{
	if (!map || atomic_fetch_sub_explicit(&map->refcnt, 1, memory_order_acq_rel) != 1)
		return;
	if (nbpf_priv(map)->owner && map->path)
		unlink(map->path);
	free_handle(map);
}

const char *ncclbpf_map__name(const struct ncclbpf_map *map) { return map ? map->name : NULL; }
const char *ncclbpf_map__path(const struct ncclbpf_map *map) { return map ? map->path : NULL; }
enum ncclbpf_map_type ncclbpf_map__type(const struct ncclbpf_map *map) { return map ? map->type : 0; }
uint32_t ncclbpf_map__key_size(const struct ncclbpf_map *map) { return map ? map->key_size : 0; }
uint32_t ncclbpf_map__value_size(const struct ncclbpf_map *map) { return map ? map->value_size : 0; }
uint32_t ncclbpf_map__max_entries(const struct ncclbpf_map *map) { return map ? map->max_entries : 0; }

size_t nbpf_map_host_value_size(const struct ncclbpf_map *map)
{
	if (map->type == NCCLBPF_MAP_PERCPU_ARRAY || map->type == NCCLBPF_MAP_PERCPU_HASH)
		return (size_t)map->value_stride * NCCLBPF_NR_SLOTS;
	return map->value_size;
}

void *nbpf_map_value_addr(struct ncclbpf_map *map, uint32_t off)
{
	if (!map || map->type != NCCLBPF_MAP_ARRAY || off >= map->value_size)
		return NULL;
	return map->array_base + off;
}

static int check_op(struct ncclbpf_map *map, const void *key, const void *value, bool write,
		    const char *op)
{
	if (!map || (!key && strcmp(op, "next_key")) || (!value && strcmp(op, "delete")))
		return nbpf_err(-EINVAL, "map %s: %s: NULL argument", map ? map->name : "(null)", op);
	if (map->type == NCCLBPF_MAP_RINGBUF)
		return nbpf_err(-EINVAL, "map %s: ring buffers have no elements; use ncclbpf_ringbuf__consume",
				map->name);
	if (write && !nbpf_priv(map)->writable)
		return nbpf_err(-EPERM, "map %s: opened read-only", map->name);
	return 0;
}

int ncclbpf_map__lookup(struct ncclbpf_map *map, const void *key, void *value)
{
	int err = check_op(map, key, value, false, "lookup");

	return err ? err : host_ops(map->type)->lookup(map, key, value);
}

int ncclbpf_map__update(struct ncclbpf_map *map, const void *key, const void *value,
			uint64_t flags)
{
	int err = check_op(map, key, value, true, "update");

	if (err)
		return err;
	if (flags > NCCLBPF_EXIST)
		return nbpf_err(-EINVAL, "map %s: update: unknown flags 0x%llx", map->name,
				(unsigned long long)flags);
	return host_ops(map->type)->update(map, key, value, flags);
}

int ncclbpf_map__delete(struct ncclbpf_map *map, const void *key)
{
	int err = check_op(map, key, NULL, true, "delete");

	return err ? err : host_ops(map->type)->del(map, key);
}

int ncclbpf_map__next_key(struct ncclbpf_map *map, const void *key, void *next_key)
{
	int err = check_op(map, key, next_key, false, "next_key");

	return err ? err : host_ops(map->type)->next_key(map, key, next_key);
}

int ncclbpf_map__lock_stats(const struct ncclbpf_map *map, struct ncclbpf_map_lock_stats *st)
{
	const struct nbpf_shm_hdr *h;

	if (!map || !st)
		return nbpf_err(-EINVAL, "ncclbpf_map__lock_stats: map and st are required");
	h = nbpf_priv(map)->hdr;
	st->timeouts = atomic_load_explicit(&h->lock_timeouts, memory_order_relaxed);
	st->recoveries = atomic_load_explicit(&h->lock_recoveries, memory_order_relaxed);
	st->discarded = atomic_load_explicit(&h->lock_discarded, memory_order_relaxed);
	return 0;
}
