/* SPDX-License-Identifier: MIT */
/*
 * clickhouse.h - the fleet store: per-domain SQLite stores replicated into ClickHouse.
 *
 * SQLite stays the durable store the guest's ACKs depend on; ClickHouse is a copy for
 * questions across VMs and hosts, written by `host-agent ship` and by the daemon's
 * replication thread (--clickhouse), never on the ACK path.
 *
 * Talks to ClickHouse's HTTP interface (libcurl): statements as POST bodies, rows as
 * RowBinary POST bodies of "INSERT INTO t FORMAT RowBinary". The URL names the server
 * and, as ClickHouse's own `database` parameter, the database the tables are in:
 * http://HOST:8123/?database=stackmap. The shipper creates its tables there when
 * missing (ha_ch_schema(), the DDL documented in host-agent/README.md); a fleet of
 * hosts puts each host's tables on a shard and queries them through Distributed
 * tables of the same names in another database.
 *
 * What a boot is in ClickHouse: its current rows. Shipping a boot computes them (the
 * boot's `report boots` numbers, its resolved stacks with their event counts as
 * `report folded` has them, its LOST and STATS rows) and a 64-bit content hash of
 * them, `snap`; when the snap differs from the one last confirmed, every row is sent
 * with a new `version` (greater than any before for this boot). Each table is a
 * ReplacingMergeTree(version) whose key is the row's identity (host, domain, boot and
 * the stack's frames, or the stream and CPU, or the stream and STATS key), so a row
 * sent again (ClickHouse restarted, the agent killed mid-ship) replaces the same row,
 * a newer count replaces an older one, and a table holds one row per identity: no
 * growth while a boot streams. A stack the boot no longer has (an event that waited
 * for its stack got it) is sent with 0 events. Reads use FINAL. The watermark, the
 * last snap and version confirmed per boot, is written to <store>.ship only after
 * ClickHouse acknowledged the boots row, which goes last: no loss, no duplicate.
 *
 * Events are rows of their own, sent incrementally per CPU page range rather than per
 * snapshot (clickhouse-events.c has the watermark): `events`, one row per event as
 * the store's `report events --json` shows it, keyed (host, domain, boot, cpu, page,
 * idx), and `event_stacks`, each resolved stack of a boot's events once, keyed by a
 * hash of its JSON, which events rows name. host_us, the event's host real time, is
 * the boot's first contact plus the event's guest time since the boot's first stored
 * event (host-agent/README.md says how far off it may be).
 *
 * A boot that ended is sealed: its events, once ClickHouse has every one final (its
 * boots row, which says it ended, is sent after them), counted in ClickHouse itself
 * into `event_totals` (per event and stack) and `event_counts` (per second before
 * the boot's last event, tail_s, and per second of host time, hs, hs_frac), stacks
 * by a hash of their folded text (`stack_names`), at a new version; then its
 * `sealed` row (host, domain, boot, the boots row's snap, that version). Reports read
 * a boot's aggregates, rows of the version its sealed row names, when that row has
 * the boots row's snap, and its events rows otherwise: a seal that died leaves rows
 * of a version no sealed row names, a boot that moved after its seal (resumed) is
 * read from its events until it is sealed again.
 */
#ifndef HA_CLICKHOUSE_H
#define HA_CLICKHOUSE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

typedef struct _HaCh HaCh;

/* @url: http(s)://HOST:PORT/[?database=DB]. Free with ha_ch_free(). */
HaCh *ha_ch_new(const char *url, GError **error);
void ha_ch_free(HaCh *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaCh, ha_ch_free)

/*
 * Run @sql. With @data, @sql is sent in the URL and @data (@len bytes) as the body
 * (an INSERT's rows); otherwise @sql is the body. The answer is appended to @out when
 * not NULL. False with @error: G_IO_ERROR_HOST_UNREACHABLE when ClickHouse could not
 * be reached (or the transfer broke), G_IO_ERROR_FAILED with its message when it
 * refused.
 */
bool ha_ch_query(HaCh *c, const char *sql, const void *data, size_t len, GString *out,
		 GError **error);

/*
 * Run the SELECT @sql (without a FORMAT clause: TabSeparated is asked for) and return
 * its rows: a new array (g_ptr_array_unref) of GStrv (freed with it), each @ncols
 * fields, unescaped. NULL with @error when the query failed or a row of the answer
 * did not have @ncols fields (G_IO_ERROR_INVALID_DATA).
 */
GPtrArray *ha_ch_query_rows(HaCh *c, const char *sql, guint ncols, GError **error);
/* The first column of the first row of @sql as a number, 0 when there is none. */
bool ha_ch_query_u64(HaCh *c, const char *sql, uint64_t *ret, GError **error);

/* Append @s to @q as a ClickHouse string literal. */
void ha_ch_sql_str(GString *q, const char *s);
/* Append the condition host = @host AND domain = @domain AND boot = @boot to @q. */
void ha_ch_sql_boot(GString *q, const char *host, const char *domain, const char *boot);

/* Create the shipper's tables in the URL's database when missing. */
bool ha_ch_schema(HaCh *c, GError **error);

typedef struct {
	guint boots;		/* shipped */
	guint unchanged;	/* skipped: the snapshot ClickHouse has is current */
	uint64_t rows;
	uint64_t events;	/* rows of the events table among them */
	uint64_t bytes;		/* RowBinary bytes sent */
} HaShipStats;

/*
 * Ship every boot of @store (domain @domain of host @host) whose snapshot changed
 * since the last confirmed ship to this URL (the watermark file @mark, a GKeyFile).
 * Adds to @st. False with @error at the first failure (what was confirmed stays).
 */
bool ha_ch_ship(HaCh *c, HaStore *store, const char *host, const char *domain,
		const char *mark, HaShipStats *st, GError **error);

/*
 * Seal every boot of the URL's database whose boots row says it ended and that has no
 * sealed row of that snap (any host's: sealing is idempotent), at most 1000 a call.
 * ha_ch_ship() calls it after it sent a boots row.
 */
bool ha_ch_seal_pending(HaCh *c, GError **error);

typedef struct {
	const char *cmd;	/* boots, top, events, folded */
	const char *host;	/* filters, NULL: all */
	const char *domain;
	const char *ended;	/* clean, crashed, disconnected, running */
	guint limit;		/* top: how many; events: per boot (0: default) */
	int64_t since_us;	/* boots alive in this host real-time range, -1: open; */
	int64_t until_us;	/* events (and top, folded from them): events in it */
	int64_t last_ns;	/* events in the last @last_ns of each boot's trace, -1 */
	const char *event;	/* only this event ("kmem/kmalloc" or "kmalloc"), NULL */
	bool json;		/* events: as the store's events --json, per boot */
} HaChReportOpts;

/*
 * Fleet reports from the URL's database (local or Distributed tables). top and
 * folded count the `stacks` table (every event of the selected boots); with @last_ns
 * or @event they count the `events` rows that pass those filters and, for events
 * (and for them), the time range on the events' host time.
 */
bool ha_ch_report(HaCh *c, const HaChReportOpts *o, GString *out, GError **error);

/*
 * Continuous replication (the daemon's --clickhouse): a thread that ships every
 * store of @state_dir every @interval_ms through its own read-only connections, off
 * the path that ACKs the guests. While ClickHouse is away it retries at the next
 * round; nothing accumulates in memory (the stores keep everything).
 */
typedef struct _HaChRepl HaChRepl;
HaChRepl *ha_ch_repl_start(const char *url, const char *state_dir, const char *host,
			   guint interval_ms, GError **error);
/* Stops after a last round (what the daemon committed before it stopped is shipped). */
void ha_ch_repl_stop(HaChRepl *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaChRepl, ha_ch_repl_stop)

#endif /* HA_CLICKHOUSE_H */
