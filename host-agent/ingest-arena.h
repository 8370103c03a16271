/* SPDX-License-Identifier: MIT */
/*
 * ingest-arena.h - what ingest remembers for a post-mortem of the guest agent's
 * window: the newest ARENA list of each boot, and the connections still live.
 *
 * ARENA (PROTOCOL.md 4.12) is unsequenced and stored nowhere: the guest announces the
 * guest-physical pages of its resend window after every WELCOME and whenever a page
 * moved, so a restarted host-agent learns it again at the next handshake. A
 * connection assembles one list from its slices (bounded by SMP_ARENA_MAX_PAGES) and
 * publishes it whole, for its store (by ha_store_serial(), so a freed store's lists
 * never match another's) and boot row; the registry holds at most
 * HA_ARENA_LISTS lists (the oldest announced goes first), per process.
 *
 * The post-mortem (pm-arena.h) takes a copy of the list and, before it replays the
 * frames read from the dump, retires the boot's live connections: each commits what
 * it applied (ha_conn_flush()) and from then on ignores its input, acknowledges
 * nothing and records nothing at its close, so the recovered frames and the ones the
 * live connection still had in its socket never both reach the store.
 *
 * Threads: the registry is locked, but ha_arena_retire_boot() flushes connections
 * of @store and so must run where they may be used: on the connection's own thread,
 * or while the caller holds the store (ha_driver_hold_store(), conn-driver.h: its
 * connection's thread then waits), as ha_postmortem_recover() does (a caller of
 * ha_pm_arena_recover() must, when a connection may run on the store).
 */
#ifndef HA_INGEST_ARENA_H
#define HA_INGEST_ARENA_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#define HA_ARENA_LISTS	64u

typedef struct {
	uint8_t boot_uuid[16];	/* of the HELLO of the connection that announced it */
	uint64_t stream_id;
	uint32_t page_size;
	uint32_t nr_pages;	/* 1..SMP_ARENA_MAX_PAGES */
	uint64_t *addrs;	/* nr_pages page-aligned guest-physical addresses */
	uint64_t list_id;
	gint64 when;		/* g_get_real_time() of its last slice */
} HaArenaList;

void ha_arena_list_free(HaArenaList *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaArenaList, ha_arena_list_free)

/* A copy of the newest list announced for @boot of @store (free with
 * ha_arena_list_free()), or NULL when there is none. */
HaArenaList *ha_arena_list_get(HaStore *store, int64_t boot);
/* The same, else the list the store kept for @boot (store-postmortem.h): NULL when
 * neither has one (@error set only when the store failed or its list is invalid). */
HaArenaList *ha_arena_list_load(HaStore *store, int64_t boot, GError **error);

/* Forget every list and live connection of @store (it is being closed). */
void ha_arena_forget_store(HaStore *store);

/*
 * Retire every live connection of @boot of @store (see the overview): flush its batch,
 * then ignore whatever else it reads. *@ret_n (may be NULL) gets how many. False with
 * @error when a flush failed (that connection is retired anyway: nothing of its
 * failed batch was acknowledged, so the recovered frames may store it).
 */
bool ha_arena_retire_boot(HaStore *store, int64_t boot, guint *ret_n, GError **error);

#endif /* HA_INGEST_ARENA_H */
