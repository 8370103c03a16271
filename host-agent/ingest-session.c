// SPDX-License-Identifier: MIT
/*
 * ingest-session.c - one guest connection and its session (see ingest.h and
 * ingest-int.h): HELLO/WELCOME, the sequence (next, duplicate, gap), the group commit
 * and the ACK that follows it, BYE and close. What a frame does is ingest-apply.c's,
 * what a batch holds ingest-batch.c's.
 */
#include "ingest-arena.h"
#include "ingest-int.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>

void ha_limits_default(HaLimits *l)
{
	*l = (HaLimits){
		.quota_bytes = HA_QUOTA_DEFAULT_BYTES,
		.max_payload = SMP_MAX_PAYLOAD,
		.max_malformed = 1000,
		.max_hellos = 16,
		.batch_bytes = 4u << 20,	/* a quarter of the guest agent's window */
		.batch_frames = 16384,
		/*
		 * zstd 1 (1.5.4) on the column format: on real guests' stores (three
		 * e2e-stream scenarios) 0.7-1.2 % larger than level 2 at 1.08-1.17x its
		 * speed, on host-bench's synthetic pages 2 % larger for 1.05x the
		 * daemon's events per CPU-second (README, issue 14 tenth round). Faster
		 * levels cost more bytes than they save CPU: -1 11-15 % larger for
		 * 1.07-1.09x, -3 19 % for 1.10x. None at all costs more CPU, not less
		 * (0.58-0.70x: the store writes each byte twice, eleventh round).
		 */
		.zstd_level = 1,
		.time_probe_ms = HA_CLOCK_PROBE_MS,
		.max_boots = HA_BOOTS_MAX_DEFAULT,
		.max_streams = HA_STREAMS_MAX_DEFAULT,
		.max_epochs = HA_EPOCHS_MAX_DEFAULT,
		.max_stacks = HA_STACKS_MAX_DEFAULT,
		.max_gaps = HA_GAPS_MAX_DEFAULT,
		.max_fullstacks = HA_FULLSTACKS_MAX_DEFAULT,
		.max_counts = HA_COUNTS_MAX_DEFAULT,
	};
}

HaConn *ha_conn_new(HaStore *store, const HaLimits *limits, const char *domain,
		    const char *peer)
{
	HaConn *c = g_new0(HaConn, 1);

	c->store = store;
	c->lim = *limits;
	c->domain = g_strdup(domain);
	c->peer = g_strdup(peer);
	c->dec = smp_decoder_new(limits->max_payload);
	c->cur_epoch = -1;
	ingest_batches_init(c);
	c->out = g_byte_array_new();
	c->out_lens = g_array_new(FALSE, FALSE, sizeof(guint));
	c->clk = ha_clock_probe_new(limits->time_probe_ms);
	c->marker.type = -1;
	return c;
}

void ha_conn_set_recovered(HaConn *c, bool recovered)
{
	c->recovered = recovered;
	/* its chunks stay apart from streamed ones: one row, one origin */
	c->compact_off = recovered;
}

void ha_conn_free(HaConn *c)
{
	if (!c)
		return;
	ingest_arena_live(c, false);
	ingest_arena_drop(c);
	ingest_commit_wait(c, NULL);
	ha_store_rollback(c->store);
	ingest_batches_free(c);
	smp_decoder_free(c->dec);
	ha_tep_free(c->tep);
	ha_pair_free(c->pair);
	ha_clock_probe_free(c->clk);
	g_byte_array_unref(c->out);
	g_array_unref(c->out_lens);
	g_clear_error(&c->cb_error);
	g_free(c->held_payload);
	g_clear_pointer(&c->recovered_pages, g_hash_table_destroy);
	if (c->ctx)
		g_main_context_unref(c->ctx);
	g_free(c->domain);
	g_free(c->peer);
	g_free(c);
}

guint ha_conn_commit_due_ms(const HaConn *c)
{
	gint64 age;

	if (!c->pending_since)
		return 0;
	age = g_get_monotonic_time() - c->pending_since;
	if (age >= HA_COMMIT_DELAY_US)
		return 0;
	return (guint)MAX((HA_COMMIT_DELAY_US - age) / 1000, 1);
}

const HaConnStats *ha_conn_stats(const HaConn *c)
{
	return &c->st;
}

const HaClockProbeStats *ha_conn_clock_stats(const HaConn *c)
{
	return ha_clock_probe_stats(c->clk);
}

const HaLatency *ha_conn_durable(const HaConn *c)
{
	return &c->durable;
}

/* Frame @seq, completed by the last read, is taken (applied or dropped as malformed):
 * into the newest run of frames if that read's, else a run of its own. */
static void rx_note(HaConn *c, uint64_t seq)
{
	IngestRxRun *last = c->rx_len ?
		&c->rx[(c->rx_head + c->rx_len - 1) % INGEST_RX_RUNS] : NULL;

	if (last && ((last->t == c->read_mono && !c->rx_cut) ||
		     c->rx_len == INGEST_RX_RUNS)) {
		if (last->t != c->read_mono)
			c->rx_merged++;
		last->last_seq = seq;
		last->frames++;
		return;
	}
	c->rx[(c->rx_head + c->rx_len++) % INGEST_RX_RUNS] = (IngestRxRun){
		.last_seq = seq, .t = c->read_mono, .frames = 1,
	};
	c->rx_cut = false;
}

/* The ACK of every frame up to @upto was written whole at @now. */
static void rx_acked(HaConn *c, uint64_t upto, gint64 now)
{
	while (c->rx_len && c->rx[c->rx_head].last_seq <= upto) {
		const IngestRxRun *r = &c->rx[c->rx_head];

		ha_latency_add(&c->durable, now - r->t, r->frames);
		c->rx_head = (c->rx_head + 1) % INGEST_RX_RUNS;
		c->rx_len--;
	}
}

/* The session's figure, once at its end; then a new session starts from nothing. */
static void log_durable(HaConn *c)
{
	const HaLatency *h = &c->durable;
	g_autofree char *merged = NULL;

	if (h->n) {
		if (c->rx_merged)
			merged = g_strdup_printf(" (%" PRIu64 " of them timed by an earlier"
						 " read: more reads than the %u runs kept)",
						 c->rx_merged, INGEST_RX_RUNS);
		g_message("%s: boot %s stream %016" PRIx64 ": commit to durable (frame read"
			  " -> its ACK written): p50 %.1f ms, p99 %.1f ms, max %.1f ms over %"
			  PRIu64 " frames%s%s", c->domain, c->boot_str, c->stream_id,
			  (double)ha_latency_quantile(h, 0.50) / 1000.0,
			  (double)ha_latency_quantile(h, 0.99) / 1000.0,
			  (double)h->max_us / 1000.0, h->n, merged ? merged : "",
			  c->ack_ms ? " (the guest asked for ACK pacing: an ACK held back"
			  " times its frames when held, durable)" : "");
	}
	memset(&c->durable, 0, sizeof(c->durable));
	c->rx_head = c->rx_len = 0;
	c->rx_cut = false;
	c->rx_merged = 0;
	c->ack_pend_end = 0;
}

size_t ha_conn_space(HaConn *c, uint8_t **ret_space)
{
	return smp_decoder_space(c->dec, ret_space);
}

void ha_conn_commit(HaConn *c, size_t n)
{
	/* the upper bound of a probe that this read completes (clocksync.h) */
	if (c->time_ok) {
		ha_host_time_now(&c->rx_time);
		/* the same clock as g_get_monotonic_time(), read once */
		c->read_mono = c->rx_time.mono / 1000;
	} else {
		c->read_mono = g_get_monotonic_time();
	}
	smp_decoder_commit(c->dec, n);
}

const uint8_t *ha_conn_output(HaConn *c, size_t *ret_len)
{
	*ret_len = c->out->len;
	return c->out->data;
}

void ha_conn_output_done(HaConn *c, size_t n)
{
	n = MIN(n, c->out->len);
	if (c->ack_pend_end && n >= c->ack_pend_end) {
		rx_acked(c, c->ack_pend_upto, g_get_monotonic_time());
		c->ack_pend_end = 0;
	} else if (c->ack_pend_end) {
		c->ack_pend_end -= n;
	}
	g_byte_array_remove_range(c->out, 0, (guint)n);
	c->head_sent += n;
	while (c->out_lens->len && c->head_sent >= g_array_index(c->out_lens, guint, 0)) {
		c->head_sent -= g_array_index(c->out_lens, guint, 0);
		g_array_remove_index(c->out_lens, 0);
	}
}

/*
 * Queue one host-to-guest frame. @payload_len is what its encoder returned: a negative
 * errno (the encoder refused its input) queues nothing. Nothing but the sealed frame
 * leaves: the buffer is zeroed first, so no host memory can reach the guest.
 */
static bool queue_frame(HaConn *c, uint8_t type, const uint8_t *payload, long payload_len)
{
	uint8_t buf[SMP_HDR_SIZE + 64] = { 0 };
	guint len;
	long n;

	if (payload_len < 0)
		return false;
	n = smp_frame_encode(buf, sizeof(buf), type, 0, 0, payload, (size_t)payload_len);
	if (n < 0)
		return false;
	/* Bounded (out_max): a frame partly sent is sent to its end, or the guest
	 * would read the next one from its middle. */
	if (c->out->len > ingest_session_limits.out_max) {
		guint keep = c->head_sent ?
			g_array_index(c->out_lens, guint, 0) - (guint)c->head_sent : 0;

		g_byte_array_set_size(c->out, keep);
		g_array_set_size(c->out_lens, keep ? 1 : 0);
		/* an ACK dropped unsent: its frames wait for the next one */
		if (c->ack_pend_end > keep)
			c->ack_pend_end = 0;
	}
	len = (guint)n;
	g_byte_array_append(c->out, buf, len);
	g_array_append_val(c->out_lens, len);
	return true;
}

/* Hold the ACK of @upto back at @now (ha_conn_ack_held())? */
static bool ack_hold(HaConn *c, uint64_t upto, gint64 now)
{
	if (!c->ack_ms || c->ack_wanted || c->bye || c->recovered)
		return false;
	if (c->ack_bytes && c->ack_bytes_since >= c->ack_bytes)
		return false;
	if (now - c->ack_last_us >= (gint64)c->ack_ms * 1000)
		return false;
	c->ack_held = upto;
	/* durable now: the guest asked to be told later, so its frames are timed now */
	rx_acked(c, upto, now);
	return true;
}

static void queue_ack(HaConn *c, uint64_t upto, bool release)
{
	uint8_t p[8] = { 0 };
	gint64 now;

	if (!c->hello || c->failed || upto == 0 || (upto == c->acked && !c->ack_wanted))
		return;
	now = g_get_monotonic_time();
	if (!release && ack_hold(c, upto, now))
		return;
	c->ack_held = 0;
	c->ack_last_us = now;
	c->ack_bytes_since = 0;
	/* c->expected is kept within smp_seq_next_ok(), so this cannot fail; if it ever
	 * did, the guest gets no ACK (it resends), never a made-up one. */
	if (!queue_frame(c, SMP_ACK, p, smp_ack_encode(upto, p, sizeof(p)))) {
		g_warning("%s: boot %s: ACK %" PRIu64 " not encodable: not sent", c->domain,
			  c->boot_str, upto);
		return;
	}
	c->acked = upto;
	c->ack_wanted = false;
	c->st.acked = upto;
	c->ack_pend_upto = upto;
	c->ack_pend_end = c->out->len;
}

void ingest_queue_ack(HaConn *c, uint64_t upto)
{
	queue_ack(c, upto, false);
}

bool ha_conn_ack_held(const HaConn *c, guint *ret_ms)
{
	gint64 left;

	if (!c->ack_held)
		return false;
	left = c->ack_last_us + (gint64)c->ack_ms * 1000 - g_get_monotonic_time();
	*ret_ms = (guint)MAX((left + 999) / 1000, 1);
	return true;
}

void ha_conn_ack_release(HaConn *c)
{
	uint64_t upto = c->ack_held;

	c->ack_held = 0;	/* whatever queue_ack() decides: held no more */
	if (upto)
		queue_ack(c, upto, true);
}

void ingest_malformed(HaConn *c, const struct smp_frame *f, const char *fmt, ...)
{
	va_list ap;
	g_autofree char *why = NULL;

	c->st.malformed++;
	c->d_malformed++;
	if (c->st.malformed > ingest_session_limits.log_first_n &&
	    c->st.malformed % ingest_session_limits.log_every)
		return;
	va_start(ap, fmt);
	why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_warning("%s: %s: boot %s stream %016" PRIx64 ": malformed %s frame seq %" PRIu64
		  " (%u bytes) dropped: %s [%" PRIu64 " malformed so far]",
		  c->domain, c->peer, c->boot_str, c->stream_id,
		  smp_type_name(f->type) ? smp_type_name(f->type) : "unknown", f->seq,
		  f->len, why, c->st.malformed);
}

bool ingest_take_store_error(HaConn *c, GError **error)
{
	if (!c->cb_error)
		return true;
	c->failed = true;
	g_propagate_error(error, g_steal_pointer(&c->cb_error));
	return false;
}

bool ha_conn_flush(HaConn *c, GError **error)
{
	return ingest_commit(c, true, error);
}

bool ha_conn_flush_start(HaConn *c, GError **error)
{
	return ingest_commit(c, false, error);
}

void ha_conn_set_committed(HaConn *c, HaConnCommitted fn, void *user)
{
	c->committed = fn;
	c->committed_user = user;
	if (!c->ctx)
		c->ctx = g_main_context_ref_thread_default();
}

/* ---- sessions ------------------------------------------------------------------ */

static void on_stored_format(const char *name, const void *text, size_t len, bool refused,
			     void *user)
{
	HaConn *c = user;
	g_autoptr(GError) e = NULL;

	if (refused) {
		ha_tep_add_refused(c->tep, name, len);
		return;
	}
	if (!ha_tep_add_format(c->tep, name, text, len, &e))
		g_warning("%s: boot %s: stored format: %s", c->domain, c->boot_str,
			  e->message);
	else if (!g_strcmp0(name, "ftrace/print"))
		ha_marker_format_parse(text, len, &c->marker);
}

static bool load_boot_state(HaConn *c, GBytes *pairs, GError **error)
{
	c->tep = ha_tep_new(c->page_size, c->big_endian);
	c->pair = ha_pair_new(ingest_batch_on_paired, c);
	if (pairs && !ha_pair_load(c->pair, g_bytes_get_data(pairs, NULL),
				   g_bytes_get_size(pairs)))
		g_warning("%s: boot %s: stored pairing state unreadable, ignored", c->domain,
			  c->boot_str);
	return ha_store_formats_foreach(c->store, c->boot, on_stored_format, c, error);
}

/*
 * What a later HELLO of a boot changes in what its first HELLO said (@was, as
 * stored), as "page size 4096 -> 8192, ..."; NULL when nothing. g_free().
 */
static char *geometry_change(const HaStoredBoot *was, const struct smp_hello *h)
{
	static const char *const what[] = { "CPUs", "page size", "map bits", "max depth" };
	uint64_t now[] = { h->nr_cpus, h->page_size, h->map_bits, h->max_depth };
	uint64_t then[] = { was->nr_cpus, was->page_size, was->map_bits, was->max_depth };
	uint32_t flags = was->flags;
	uint64_t text = was->text_addr;
	GString *o = g_string_new(NULL);

	for (int i = 0; i < 4; i++) {
		if (then[i] != now[i])
			g_string_append_printf(o, "%s%s %" PRIu64 " -> %" PRIu64, o->len ? ", " : "",
					       what[i], then[i], now[i]);
	}
	if ((flags ^ h->flags) & SMP_HELLO_PAGES_BE)
		g_string_append_printf(o, "%spages %s -> %s", o->len ? ", " : "",
				       flags & SMP_HELLO_PAGES_BE ? "big-endian" : "little-endian",
				       h->flags & SMP_HELLO_PAGES_BE ? "big-endian" : "little-endian");
	if ((flags ^ h->flags) & SMP_HELLO_STACKMAP)
		g_string_append_printf(o, "%sstackmap %s -> %s", o->len ? ", " : "",
				       flags & SMP_HELLO_STACKMAP ? "on" : "off",
				       h->flags & SMP_HELLO_STACKMAP ? "on" : "off");
	if (text != h->text_addr)
		g_string_append_printf(o, "%s_text 0x%" PRIx64 " -> 0x%" PRIx64, o->len ? ", " : "",
				       text, h->text_addr);
	if (!o->len) {
		g_string_free(o, TRUE);
		return NULL;
	}
	return g_string_free(o, FALSE);
}

/* What the boot already stores of each text kind (its every stream and session). */
static bool load_text_use(HaConn *c, GError **error)
{
	for (int k = 0; k < TEXT_KINDS; k++) {
		uint64_t rows, bytes;

		if (!ha_store_text_use(c->store, c->boot, ingest_text_kinds[k].kind, &rows,
				       &bytes, error))
			return false;
		c->text_used[k] = rows * HA_TEXT_ROW_COST + bytes;
	}
	return true;
}

static bool open_stream(HaConn *c, const struct smp_hello *h, GError **error)
{
	g_auto(HaStoredBoot) was = { 0 };
	int64_t now = g_get_real_time(), epoch = -1;
	bool found;

	if (!ha_store_begin(c->store, error) ||
	    !ha_store_boot_find(c->store, h->boot_id, &found, &was, error))
		return false;
	if (!found && c->recovered) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "recovered HELLO of boot %s: the store has no such boot",
			    c->boot_str);
		return false;
	}
	if (found) {
		g_autofree char *changed = geometry_change(&was, h);

		c->boot = was.id;
		if (changed) {
			/* The boot's pages, ids and stacks are stored and parsed with its
			 * first geometry: a guest cannot change it halfway. */
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "HELLO of boot %s stream %016" PRIx64 " changes the boot's"
				    " geometry (%s): refused", c->boot_str, h->stream_id, changed);
			return false;
		}
		/* a replay of a dump leaves the boot crashed */
		if (!c->recovered && !ha_store_boot_resume(c->store, c->boot, now, error))
			return false;
	} else {
		uint64_t boots;

		if (!ha_store_boot_count(c->store, &boots, error))
			return false;
		if (boots >= c->lim.max_boots) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
				    "HELLO of a new boot %s: the store holds %" PRIu64 " boots,"
				    " the limit: refused (move the store away to start a new"
				    " one)", c->boot_str, boots);
			return false;
		}
		if (!ha_store_boot_insert(c->store, h, now, &c->boot, error))
			return false;
	}
	/* Any other boot still open, or left disconnected, ended without a BYE and the
	 * domain has booted again since: it crashed (or was reset). */
	if ((!c->recovered && !ha_store_boots_crash_others(c->store, c->boot, error)) ||
	    !ha_store_boot_rows(c->store, c->boot, &c->rows, error) ||
	    !ha_store_stream_find(c->store, c->boot, h->stream_id, &found, &c->stream,
				  &c->expected, &epoch, error))
		return false;
	if (found) {
		c->cur_epoch = epoch;
		if (!smp_seq_next_ok(c->expected)) {
			/* e.g. a store written before sequence numbers were bounded */
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "stream %016" PRIx64 " of boot %s: stored next seq %" PRIu64
				    " is outside 1..%" PRIu64 ": refused (start a new stream)",
				    h->stream_id, c->boot_str, c->expected, SMP_SEQ_MAX + 1);
			c->expected = 1;
			return false;
		}
	} else {
		if (c->rows.streams >= c->lim.max_streams) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
				    "HELLO of a new stream %016" PRIx64 " of boot %s: the boot"
				    " holds %" PRIu64 " streams, the limit: refused",
				    h->stream_id, c->boot_str, c->rows.streams);
			return false;
		}
		if (!ha_store_stream_insert(c->store, c->boot, h->stream_id, &c->stream, error))
			return false;
		c->rows.streams++;
		c->expected = 1;
	}
	if (!ha_store_commit(c->store, error))
		return false;
	c->acked = c->expected - 1;
	if (!load_text_use(c, error))
		return false;
	return load_boot_state(c, was.pair_state, error);
}

/* What the session's clock probes gave, once at its end. */
static void log_clock(HaConn *c)
{
	const HaClockProbeStats *k = ha_clock_probe_stats(c->clk);

	if (!k->sent)
		return;
	g_message("%s: boot %s stream %016" PRIx64 ": %" PRIu64 " clock probes, %" PRIu64
		  " samples (best round trip %.1f us), %" PRIu64 " failed in the guest, %"
		  PRIu64 " unanswered, %" PRIu64 " unmatched", c->domain, c->boot_str,
		  c->stream_id, k->sent, k->samples,
		  k->best_rtt_ns < 0 ? 0.0 : (double)k->best_rtt_ns / 1000.0, k->failed,
		  k->expired, k->unmatched);
}

static void mark_disconnected(HaConn *c)
{
	g_autoptr(GError) e = NULL;

	if (!ha_store_boot_disconnected(c->store, c->boot, g_get_real_time(), &e))
		g_warning("%s: %s", c->domain, e->message);
	g_message("%s: boot %s stream %016" PRIx64 ": disconnected without BYE after seq %"
		  PRIu64, c->domain, c->boot_str, c->stream_id, c->expected - 1);
}

/* The guest starts over on the same connection: finish the current session (its
 * frames committed and acknowledged) and forget it. */
static bool end_session(HaConn *c, GError **error)
{
	if (!ha_conn_flush(c, error))
		return false;
	ingest_compact_finish(c);
	if (!c->bye && !c->recovered)
		mark_disconnected(c);
	log_clock(c);
	log_durable(c);
	ingest_arena_live(c, false);
	ingest_arena_drop(c);
	g_clear_pointer(&c->tep, ha_tep_free);
	g_clear_pointer(&c->pair, ha_pair_free);
	ingest_batches_drop(c);
	c->hello = false;
	c->bye = false;
	c->cur_epoch = -1;
	c->warned_unparsed = false;
	c->warned_stat_key = false;
	c->warned_rows = false;
	c->orphans_saved = 0;
	c->time_ok = false;
	c->marker.type = -1;
	ha_clock_probe_reset(c->clk);
	return true;
}

static bool queue_welcome(HaConn *c, GError **error)
{
	uint8_t p[16] = { 0 };
	struct smp_welcome w = { .resume_seq = c->expected, .max_payload = c->lim.max_payload };

	if (!queue_frame(c, SMP_WELCOME, p, smp_welcome_encode(&w, p, sizeof(p)))) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "no valid WELCOME for resume seq %" PRIu64 " / max payload %u",
			    w.resume_seq, w.max_payload);
		return false;
	}
	return true;
}

static bool on_hello(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_hello h;
	int r = smp_hello_decode(&h, f->payload, f->len);

	if (r < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "malformed HELLO (%s)", smp_strerror(r));
		return false;
	}
	/* HELLOs with nothing applied in between: bounded (PROTOCOL.md 3, item 1). */
	if (++c->hellos > c->lim.max_hellos) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%u HELLOs on one connection without data between them (limit %u)",
			    c->hellos, c->lim.max_hellos);
		return false;
	}
	/* A later HELLO starts a new session as if the connection had been reopened:
	 * a virtio-serial guest cannot close the host's side of the port. */
	if (c->hello && !end_session(c, error))
		return false;
	if (h.page_size > SMP_PAGE_SIZE_MAX || h.map_bits > ingest_session_limits.map_bits_max) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "HELLO with page size %u / map bits %u out of range", h.page_size,
			    h.map_bits);
		return false;
	}
	memcpy(c->boot_uuid, h.boot_id, 16);
	for (int i = 0, o = 0; i < 16; i++) {
		o += g_snprintf(c->boot_str + o, sizeof(c->boot_str) - o, "%02x", h.boot_id[i]);
		if (i == 3 || i == 5 || i == 7 || i == 9)
			c->boot_str[o++] = '-';
	}
	c->stream_id = h.stream_id;
	c->gap_note = false;
	c->nr_cpus = h.nr_cpus;
	c->page_size = h.page_size;
	c->map_bits = h.map_bits;
	c->big_endian = h.flags & SMP_HELLO_PAGES_BE;
	c->time_ok = h.flags & SMP_HELLO_TIME;
	c->ack_ms = MIN(h.ack_ms, SMP_ACK_MS_MAX);
	c->ack_bytes = h.ack_bytes;
	c->ack_last_us = 0;
	c->ack_bytes_since = 0;
	c->ack_held = 0;
	ingest_batches_start(c, c->nr_cpus);
	if (!open_stream(c, &h, error))
		return false;
	c->hello = true;
	ingest_arena_live(c, true);
	g_message("%s: %s: boot %s (%.*s) stream %016" PRIx64 ", resuming at seq %" PRIu64,
		  c->domain, c->peer, c->boot_str, (int)h.release_len, h.release,
		  c->stream_id, c->expected);
	return queue_welcome(c, error);
}

/* Unsequenced: it completes a probe at the time its read returned (c->rx_time). */
static bool on_time_reply(HaConn *c, const struct smp_frame *f)
{
	struct smp_time_reply m;
	int r = smp_time_reply_decode(&m, f->payload, f->len);

	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	if (!c->time_ok) {
		ingest_malformed(c, f, "TIME_REPLY from a guest that did not offer TIME");
		return true;
	}
	/* an id we hold no probe for (expired, another connection's, made up): ignored */
	if (ha_clock_probe_reply(c->clk, m.probe_id, m.status, &c->rx_time) &&
	    !c->pending_since)
		c->pending_since = g_get_monotonic_time();
	return true;
}

static bool on_frame(HaConn *c, const struct smp_frame *f, GError **error)
{
	c->st.frames++;
	if (f->type == SMP_HELLO)
		return on_hello(c, f, error);
	if (!c->hello) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%s frame before HELLO", smp_type_name(f->type) ?
			    smp_type_name(f->type) : "unknown");
		return false;
	}
	if (f->type == SMP_TIME_REPLY && f->seq == 0)
		return on_time_reply(c, f);
	if (f->type == SMP_ARENA) {
		if (f->seq == 0)
			return ingest_on_arena(c, f);
		ingest_malformed(c, f, "ARENA with a seq (it is unsequenced)");
		return true;
	}
	if (f->type == SMP_WELCOME || f->type == SMP_ACK || f->type == SMP_TIME ||
	    f->seq == 0) {
		if (f->type >= 128 && f->seq == 0 && !smp_type_name(f->type))
			return true;	/* unknown unsequenced host-bound type: ignored */
		ingest_malformed(c, f, "%s", f->seq == 0 ? "sequenced type with seq 0" :
			  "host-to-guest type from the guest");
		return true;
	}
	switch (smp_seq_classify(c->expected, f->seq)) {
	case SMP_SEQ_BAD:
		/* PROTOCOL.md 2.2: dropped, and its seq is not taken as the next one */
		ingest_malformed(c, f, "seq %" PRIu64 " out of range (expected %" PRIu64 ", at most %"
			  PRIu64 " ahead, at most %" PRIu64 ")", f->seq, c->expected,
			  SMP_SEQ_MAX_GAP, SMP_SEQ_MAX);
		return true;
	case SMP_SEQ_DUP:
		c->st.duplicates++;
		c->d_dup++;
		c->ack_wanted = true;
		return true;
	case SMP_SEQ_NEXT:
		break;
	case SMP_SEQ_GAP: {
		uint64_t gap = f->seq - c->expected;

		c->st.gap_frames += gap;
		c->d_gap += gap;
		g_warning("%s: boot %s stream %016" PRIx64 ": frames %" PRIu64 "..%" PRIu64
			  " never arrived (the guest dropped them): recorded as loss",
			  c->domain, c->boot_str, c->stream_id, c->expected, f->seq - 1);
		if (c->pair)
			ha_pair_lost_all(c->pair);
		c->gap_note = true;
		c->gap_lo = c->expected;
		c->gap_hi = f->seq - 1;
		c->expected = f->seq;
		break;
	}
	}
	if (f->type != SMP_HELLO && smp_type_name(f->type) &&
	    smp_msg_check_size(f->type, f->len) < 0) {
		ingest_malformed(c, f, "payload size %u out of the type's bounds", f->len);
	} else {
		/* a PAGE writes no row until the commit (a new inline stack excepted,
		 * ingest-batch.c): no transaction yet, so that it need not wait for the
		 * commit in flight (ingest-commit.c) */
		if (f->type != SMP_PAGE && !ha_store_begin(c->store, error))
			return false;
		if (!c->pending_since)
			c->pending_since = g_get_monotonic_time();
		if ((c->gap_note && !ingest_note_gap(c, error)) ||
		    !ingest_apply(c, f, error) || !ingest_take_store_error(c, error)) {
			c->failed = true;	/* never commit a frame applied in part */
			return false;
		}
		c->st.applied++;
		c->ack_bytes_since += f->len;
		c->hellos = 0;
	}
	c->expected = f->seq + 1;
	rx_note(c, f->seq);
	c->batch_frames++;
	c->batch_bytes += f->len;
	if (c->bye || c->batch_frames >= c->lim.batch_frames ||
	    c->batch_bytes >= c->lim.batch_bytes) {
		if (!ingest_commit(c, false, error))
			return false;
		/* the batch is full while the last one is still in flight: the frames
		 * wait in the decoder until it is done (ha_conn_read()) */
		if (c->flush_due)
			c->paused = true;
	}
	return true;
}

bool ha_conn_time_probe(HaConn *c)
{
	uint8_t p[SMP_TIME_SIZE] = { 0 };
	HaHostTime t1;
	uint64_t id;

	/* after BYE the agent frames nothing more: a marker would never come back */
	if (!c->hello || !c->time_ok || c->failed || c->bye)
		return false;
	ha_host_time_now(&t1);
	if (!ha_clock_probe_next(c->clk, g_get_monotonic_time(), &t1, &id))
		return false;
	return queue_frame(c, SMP_TIME, p, smp_time_encode(id, p, sizeof(p)));
}

HaReadResult ha_conn_read(HaConn *c, unsigned int max_reads, size_t max_bytes,
			  HaReadFn fn, void *ctx, GError **error)
{
	size_t total = 0;

	/* frames left in the decoder by a pause first */
	if (!ha_conn_process(c, error))
		return HA_READ_FAILED;
	if (c->paused)
		return HA_READ_PAUSED;
	for (unsigned int i = 0; i < max_reads; i++) {
		uint8_t *space;
		size_t room = ha_conn_space(c, &space);
		ssize_t n;

		if (room == 0) {
			if (!ha_conn_process(c, error))
				return HA_READ_FAILED;
			room = ha_conn_space(c, &space);
			if (room == 0) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "decoder stuck");
				return HA_READ_FAILED;
			}
		}
		n = fn(ctx, space, MIN(room, max_bytes - total));
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return HA_READ_DRY;
		if (n == 0)
			return HA_READ_END;
		if (n < 0) {
			g_set_error(error, G_IO_ERROR, g_io_error_from_errno((int)-n), "read: %s",
				    g_strerror((int)-n));
			return HA_READ_FAILED;
		}
		ha_conn_commit(c, (size_t)n);
		if (!ha_conn_process(c, error))
			return HA_READ_FAILED;
		if (c->paused)
			return HA_READ_PAUSED;
		total += (size_t)n;
		if (total >= max_bytes)
			break;
	}
	return HA_READ_MORE;
}

/*
 * Whether @f would touch the store now while a commit is in flight (ingest-commit.c):
 * every frame that writes rows (or ends a session), and a PAGE after a gap. Such a
 * frame is held until the commit is done rather than wait for it on our thread (and
 * stall every other connection of the main loop). A PAGE whose inline stack is new
 * still waits, in the pairing callback (ingest-batch.c).
 */
static bool needs_store(const HaConn *c, const struct smp_frame *f)
{
	if (f->type == SMP_HELLO)
		return true;	/* the session ends: its last batch is committed */
	if (f->seq == 0)
		return false;	/* TIME_REPLY and unknown unsequenced types */
	return f->type != SMP_PAGE || f->seq != c->expected;
}

/* Keep @f (its payload copied: the decoder's buffer moves) for after the commit. */
static void hold(HaConn *c, const struct smp_frame *f)
{
	c->held = *f;
	c->held_payload = g_memdup2(f->payload, f->len);
	c->held.payload = c->held_payload;
	c->has_held = true;
	c->paused = true;
}

bool ha_conn_process(HaConn *c, GError **error)
{
	if (c->retired) {
		/* a post-mortem replays the rest from the dump (ingest-arena.h) */
		smp_decoder_reset(c->dec);
		return true;
	}
	while (!c->paused) {
		struct smp_frame f;
		size_t skipped = 0;
		g_autofree uint8_t *held = NULL;	/* f's payload until the next frame */
		int r;

		if (c->has_held) {
			held = g_steal_pointer(&c->held_payload);
			f = c->held;
			c->has_held = false;
			r = 1;
		} else {
			r = smp_decoder_next(c->dec, &f, &skipped);
		}
		if (r == 0)
			return true;
		if (r == 1) {
			if (c->flight && needs_store(c, &f) && !ingest_flight_yield(c)) {
				hold(c, &f);
				return true;
			}
			if (!on_frame(c, &f, error))
				return false;
			if (c->st.malformed > c->lim.max_malformed) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
					    "%" PRIu64 " malformed frames (limit %u)",
					    c->st.malformed, c->lim.max_malformed);
				return false;
			}
			continue;
		}
		if (r == -EPROTONOSUPPORT) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
				    "guest speaks protocol version %u.%u, this host-agent %u.%u",
				    f.major, f.minor, SMP_VERSION_MAJOR, SMP_VERSION_MINOR);
			return false;
		}
		{
			const struct smp_decoder_stats *ds = smp_decoder_stats(c->dec);
			uint64_t bad = ds->garbage_runs + ds->header_errors +
				       ds->payload_errors + ds->oversize;

			if (bad <= ingest_session_limits.log_first_n ||
			    bad % ingest_session_limits.log_every == 0)
				g_warning("%s: %s: %s (%zu bytes skipped; %" PRIu64 " garbage"
					  " bytes so far)", c->domain, c->peer, smp_strerror(r),
					  skipped, ds->garbage_bytes);
			if (bad > c->lim.max_malformed) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
					    "%" PRIu64 " framing errors (limit %u)", bad,
					    c->lim.max_malformed);
				return false;
			}
		}
	}
	return true;
}

void ha_conn_close(HaConn *c)
{
	g_autoptr(GError) e = NULL;

	ingest_arena_live(c, false);
	ingest_arena_drop(c);
	if (!c->hello)
		return;
	if (c->retired) {
		/* flushed when retired; the boot's end is the post-mortem's to record */
		log_clock(c);
		log_durable(c);
		g_message("%s: boot %s stream %016" PRIx64 ": closed after its post-mortem"
			  " (retired at seq %" PRIu64 ")", c->domain, c->boot_str, c->stream_id,
			  c->expected - 1);
		return;
	}
	if (!c->failed && !ha_conn_flush(c, &e)) {
		g_warning("%s: boot %s: last batch not stored: %s", c->domain, c->boot_str,
			  e->message);
		g_clear_error(&e);
	}
	ha_store_rollback(c->store);
	if (!c->failed)
		ingest_compact_finish(c);
	log_clock(c);
	log_durable(c);
	if ((c->bye && !c->failed) || c->recovered)
		return;
	mark_disconnected(c);
}
