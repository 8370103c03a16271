// SPDX-License-Identifier: MIT
/*
 * arena.c - the window's pages in guest-physical memory, announced (see arena.h).
 *
 * /proc/self/pagemap has one u64 per virtual page: bit 63 "present", bits 0-54 the
 * page frame number (Documentation/admin-guide/mm/pagemap.rst). A locked anonymous
 * page is always present; a frame number of 0 means the reader lacks CAP_SYS_ADMIN.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#define PM_PRESENT	(UINT64_C(1) << 63)
#define PM_PFN_MASK	((UINT64_C(1) << 55) - 1)

int arena_init(struct arena *ar, struct win *w, const char *pagemap)
{
	void *map;
	size_t len, ps;

	memset(ar, 0, sizeof(*ar));
	ar->pagemap_fd = -1;
	win_map(w, &map, &len, &ps);
	ar->map = map;
	ar->map_len = len;
	ar->page_size = ps;
	if (len / ps > SMP_ARENA_MAX_PAGES) {
		log_warning("window of %zu pages: above the %u an ARENA list holds; "
			    "post-mortem recovery of the window is off", len / ps,
			    SMP_ARENA_MAX_PAGES);
		return 0;
	}
	ar->nr_pages = (uint32_t)(len / ps);
	ar->addrs = calloc(ar->nr_pages, sizeof(*ar->addrs));
	ar->raw = calloc(ar->nr_pages, sizeof(*ar->raw));
	if (!ar->addrs || !ar->raw) {
		arena_done(ar);
		return -ENOMEM;
	}
	if (mlock(map, len) == 0)
		ar->locked = true;
	else
		/* still worth announcing: a guest without swap keeps the pages anyway */
		log_warning("cannot lock the window in memory (%s): its pages may move or "
			    "be swapped out, which a post-mortem would miss", strerror(errno));
	/*
	 * Write to each page so that it has its own frame (not the shared zero page):
	 * mlock() faults them in, but a failed one does not, nor does a sanitizer's
	 * mlock(), which only pretends (AddressSanitizer ignores mlock).
	 */
	for (size_t off = 0; off < len; off += ps)
		((volatile uint8_t *)map)[off] = ((uint8_t *)map)[off];
	ar->pagemap_fd = open(pagemap, O_RDONLY | O_CLOEXEC);
	if (ar->pagemap_fd < 0)
		log_warning("cannot open %s (%s): post-mortem recovery of the window is off",
			    pagemap, strerror(errno));
	return 0;
}

void arena_done(struct arena *ar)
{
	if (ar->locked)
		munlock(ar->map, ar->map_len);
	if (ar->pagemap_fd >= 0)
		close(ar->pagemap_fd);
	free(ar->addrs);
	free(ar->raw);
	free(ar->frames);
	memset(ar, 0, sizeof(*ar));
	ar->pagemap_fd = -1;
}

int arena_refresh(struct arena *ar)
{
	size_t want = (size_t)ar->nr_pages * sizeof(*ar->raw);
	off_t at = (off_t)((uintptr_t)ar->map / ar->page_size * sizeof(*ar->raw));
	bool changed = !ar->known;
	size_t got = 0;

	if (ar->pagemap_fd < 0 || !ar->nr_pages)
		return -ENODATA;
	while (got < want) {
		ssize_t n = pread(ar->pagemap_fd, (uint8_t *)ar->raw + got, want - got,
				  at + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_once(LOG_WARNING, "reading the window's page map: %s; post-mortem "
				 "recovery of the window is off", n < 0 ? strerror(errno) :
				 "short read");
			ar->known = false;
			return n < 0 ? negerrno() : -EIO;
		}
		got += (size_t)n;
	}
	for (uint32_t i = 0; i < ar->nr_pages; i++) {
		uint64_t e = ar->raw[i], pfn = e & PM_PFN_MASK;

		if (!(e & PM_PRESENT) || pfn == 0) {
			log_once(LOG_WARNING, "the window's page %u shows no physical address"
				 " (%s): post-mortem recovery of the window is off", i,
				 e & PM_PRESENT ? "not root?" : "not present");
			ar->known = false;
			return -ENODATA;
		}
		if (ar->addrs[i] != pfn * ar->page_size) {
			ar->addrs[i] = pfn * ar->page_size;
			changed = true;
		}
	}
	if (!changed)
		return 0;
	if (ar->known)
		ar->changes++;
	ar->known = true;
	ar->list_id++;
	return 1;
}

int arena_encode(struct arena *ar, uint32_t max_payload)
{
	uint32_t per, nr_msgs;
	size_t need, off = 0;

	if (!ar->known)
		return -ENODATA;
	if (max_payload > SMP_MAX_PAYLOAD || max_payload < SMP_ARENA_FIXED + 8)
		max_payload = SMP_MAX_PAYLOAD;
	per = MIN((max_payload - SMP_ARENA_FIXED) / 8, SMP_ARENA_MAX_PER_MSG);
	nr_msgs = (ar->nr_pages + per - 1) / per;
	need = (size_t)nr_msgs * (SMP_HDR_SIZE + SMP_ARENA_FIXED) +
	       (size_t)ar->nr_pages * 8;
	if (need > ar->frames_cap) {
		uint8_t *p = realloc(ar->frames, need);

		if (!p)
			return -ENOMEM;
		ar->frames = p;
		ar->frames_cap = need;
	}
	for (uint32_t first = 0; first < ar->nr_pages; first += per) {
		struct smp_arena m = {
			.page_size = (uint32_t)ar->page_size,
			.nr_pages = ar->nr_pages,
			.first = first,
			.nr = MIN(per, ar->nr_pages - first),
			.list_id = ar->list_id,
		};
		long n = smp_arena_encode(&m, ar->addrs + first, ar->frames + off +
					  SMP_HDR_SIZE, need - off - SMP_HDR_SIZE);

		if (n < 0)
			return (int)n;
		n = smp_frame_seal(ar->frames + off, SMP_ARENA, 0, 0, (uint32_t)n);
		if (n < 0)
			return (int)n;
		off += (size_t)n;
	}
	ar->frames_len = off;
	return 0;
}
