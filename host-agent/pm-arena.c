// SPDX-License-Identifier: MIT
/*
 * pm-arena.c - the guest agent's undelivered frames out of a dump (see pm-arena.h).
 */
#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

#include "le.h"
#include "pm-arena.h"
#include "proto.h"
#include "store-ingest.h"

GBytes *ha_pm_arena_read(HaCore *core, const HaArenaList *l, GError **error)
{
	uint64_t len = (uint64_t)l->nr_pages * l->page_size;
	g_autofree uint8_t *buf = NULL;

	if (!l->nr_pages || len > HA_PM_ARENA_MAX_BYTES) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the agent's window of %u pages of %u bytes is above the %llu "
			    "bytes read from a dump", l->nr_pages, l->page_size,
			    (unsigned long long)HA_PM_ARENA_MAX_BYTES);
		return NULL;
	}
	buf = g_malloc(len);
	for (uint32_t i = 0; i < l->nr_pages; i++) {
		if (!ha_core_read_phys(core, l->addrs[i], buf + (size_t)i * l->page_size,
				       l->page_size)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "page %u of the agent's window (physical 0x%" PRIx64 ") is "
				    "not in the dump", i, l->addrs[i]);
			return NULL;
		}
	}
	return g_bytes_new_take(g_steal_pointer(&buf), len);
}

bool ha_pm_stream_hello(const uint8_t *buf, size_t len, struct smp_hello *ret)
{
	/* header: magic, major, minor, type (6), flags, payload length (8) */
	return len >= SMP_HDR_SIZE + SMP_HELLO_FIXED && buf[6] == SMP_HELLO &&
	       ha_le32(buf + 8) <= len - SMP_HDR_SIZE &&
	       smp_hello_decode(ret, buf + SMP_HDR_SIZE, ha_le32(buf + 8)) >= 0;
}

bool ha_pm_arena_replay(HaStore *store, const HaLimits *limits, const char *domain,
			int64_t boot, GBytes *stream, HaConnStats *ret_stats, GError **error)
{
	g_auto(HaStoredBoot) was = { 0 };
	g_autoptr(HaConn) c = NULL;
	struct smp_hello h;
	gsize len, done = 0;
	const uint8_t *buf = g_bytes_get_data(stream, &len);
	g_autofree char *peer = NULL;
	bool found, ok = true;

	/* the stream starts with the HELLO ha_pm_arena_scan() checked: of @boot? */
	if (!ha_pm_stream_hello(buf, len, &h)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the recovered stream does not start with a HELLO");
		return false;
	}
	if (!ha_store_boot_find(store, h.boot_id, &found, &was, error))
		return false;
	if (!found || was.id != boot) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the agent's window is of another boot than boot %" G_GINT64_FORMAT
			    " (%s)", boot, found ? "a boot stored earlier" : "one never stored");
		return false;
	}
	peer = g_strdup_printf("post-mortem of stream %016" PRIx64, h.stream_id);
	c = ha_conn_new(store, limits, domain, peer);
	ha_conn_set_recovered(c, true);
	while (ok && done < len) {
		uint8_t *space;
		size_t room = ha_conn_space(c, &space), n;
		const uint8_t *o;
		size_t olen;

		if (room == 0) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "decoder stuck");
			ok = false;
			break;
		}
		n = MIN(room, len - done);
		memcpy(space, buf + done, n);
		ha_conn_commit(c, n);
		done += n;
		ok = ha_conn_process(c, error);
		/* WELCOME and ACKs are for no one */
		o = ha_conn_output(c, &olen);
		(void)o;
		ha_conn_output_done(c, olen);
	}
	if (ok)
		ok = ha_conn_flush(c, error);
	ha_conn_close(c);
	if (ret_stats)
		*ret_stats = *ha_conn_stats(c);
	return ok;
}

bool ha_pm_arena_recover(HaCore *core, HaStore *store, const HaLimits *limits,
			 const char *domain, int64_t boot, HaPmArenaResult *ret,
			 GError **error)
{
	HaPmArenaResult res = { 0 };
	g_autoptr(HaArenaList) l = NULL;
	g_autoptr(GBytes) map = NULL, stream = NULL;
	g_autoptr(GError) retire_error = NULL;
	bool ok = false;

	/* first: nothing the live connection applied is left uncommitted, and nothing
	 * it reads from now on is applied */
	if (!ha_arena_retire_boot(store, boot, &res.retired, &retire_error))
		g_warning("%s: boot %" G_GINT64_FORMAT ": %s", domain, boot,
			  retire_error->message);
	l = ha_arena_list_get(store, boot);
	if (!l) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "the guest agent announced no window (ARENA) for boot %"
			    G_GINT64_FORMAT " to this host-agent", boot);
		goto out;
	}
	map = ha_pm_arena_read(core, l, error);
	if (!map)
		goto out;
	stream = ha_pm_arena_scan(g_bytes_get_data(map, NULL), g_bytes_get_size(map),
				  &res.scan, error);
	if (!stream)
		goto out;
	ok = ha_pm_arena_replay(store, limits, domain, boot, stream, &res.conn, error);
	if (ok)
		g_message("%s: boot %" G_GINT64_FORMAT ": the agent's window in the dump: %"
			  PRIu64 " frames (seq %" PRIu64 "..%" PRIu64 "), %" PRIu64 " stored "
			  "now, %" PRIu64 " the store had, %" PRIu64 " missing between them",
			  domain, boot, res.scan.frames, res.scan.seq_lo, res.scan.seq_hi,
			  res.conn.applied, res.conn.duplicates, res.conn.gap_frames);
out:
	if (ret)
		*ret = res;
	return ok;
}
