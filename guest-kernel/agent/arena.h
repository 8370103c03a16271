/* SPDX-License-Identifier: MIT */
/*
 * arena.h - where the resend window lives in the guest's physical memory, announced to
 * the host (ARENA, PROTOCOL.md 4.12) for post-mortem recovery.
 *
 * Overview
 * --------
 * When the guest panics, the frames the agent read from the ring buffers but the host
 * has not stored yet (not written, or in the virtqueue when QEMU paused the guest)
 * exist only in the window (window.h), and the ring buffers no longer have them. The
 * host can read them from a dump of the guest's memory if it knows where the window's
 * pages are: their guest-physical addresses, from /proc/self/pagemap (root only: to
 * anyone else the kernel shows page frame numbers as 0).
 *
 * Life cycle:
 *   arena_init()     lock the window's mapping in memory (mlock: no swap-out, and
 *                    every page is present from the start), open pagemap;
 *   arena_refresh()  read every page's physical address; says whether the list
 *                    changed since the last one (locked pages can still be moved by
 *                    compaction or migration), checked at a rescan when /proc/vmstat
 *                    says a page may have moved (sysinfo.h, page moves);
 *   arena_encode()   the list as ARENA frames for the session (session.h,
 *                    sess_set_arena()), sent after each WELCOME and after a change;
 *   arena_done().
 *
 * A page moved after the last refresh and before a panic leaves the host reading the
 * page's old frame: it finds stale frames there or none (each frame is checked whole
 * by its CRCs), never a wrong one in a valid frame's place, except a frame of the same
 * stream that was superseded in place - which cannot happen between refreshes unless
 * the window was reset or spliced (both rare and followed by the next refresh). The
 * list is at most two --rescan-ms out of date (a move counted after the rescan that
 * read vmstat is seen at the next).
 */
#ifndef SMG_ARENA_H
#define SMG_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "window.h"

struct arena {
	uint8_t *map;		/* the window's mapping (win_map()) */
	size_t map_len;
	size_t page_size;
	uint32_t nr_pages;
	int pagemap_fd;		/* -1: recovery is off (logged once) */
	bool locked;		/* mlock() took */
	bool known;		/* addrs holds every page's address */
	uint64_t *addrs;	/* guest-physical address of each page, in map order */
	uint64_t *raw;		/* pagemap entries, read buffer */
	uint64_t list_id;	/* of the current list; a new one per change */
	uint8_t *frames;	/* the ARENA frames of the current list (arena_encode()) */
	size_t frames_len;
	size_t frames_cap;
	uint64_t changes;	/* lists announced after a page moved */
};

/* Lock @w's mapping and open @pagemap (normally /proc/self/pagemap). Failures turn the
 * announcement off (logged) but are not errors: -ENOMEM only when out of memory. */
int arena_init(struct arena *ar, struct win *w, const char *pagemap);
void arena_done(struct arena *ar);

/*
 * Read the pages' physical addresses. 1 when the list is known and differs from the
 * last one read (a new list_id: announce it), 0 when unchanged, -errno when the
 * addresses cannot be read or a page is not present (nothing to announce).
 */
int arena_refresh(struct arena *ar);

/* The current list as sealed ARENA frames of at most @max_payload payload bytes each,
 * into ar->frames (owned by @ar, valid until the next arena_encode()). -ENODATA when
 * no list is known. */
int arena_encode(struct arena *ar, uint32_t max_payload);

#endif
