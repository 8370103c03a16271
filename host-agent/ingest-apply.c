// SPDX-License-Identifier: MIT
/*
 * ingest-apply.c - one sequenced frame of a session applied to the open transaction
 * (see ingest-int.h). Each frame is checked whole before it touches the store; a
 * malformed one is counted (ingest_malformed()) and skipped, its seq consumed; a store
 * failure fails the frame and its batch.
 */
#include "ingest-int.h"

#include <inttypes.h>
#include <string.h>

#include "chunk.h"
#include "pagewalk.h"
#include "store-postmortem.h"

const IngestSessionLimits ingest_session_limits = {
	/* slot index in bits 0..SMP_ID_SLOT_BITS-1 of a stack_id: 2 << map_bits slots */
	.map_bits_max = SMP_ID_SLOT_BITS - 1,
	.fullstack_cache_bytes = 16u << 20,
	.hist_slots_min = 256,
	.log_first_n = 10,
	.log_every = 1000,
	/* only WELCOME and cumulative ACKs go out: a guest that does not read them
	 * loses only older ACKs, which the next one supersedes */
	.out_max = 4096,
};

const IngestTextKind ingest_text_kinds[TEXT_KINDS] = {
	[TEXT_KSYMS] = { SMP_KSYMS, "ksyms", HA_TEXT_KSYMS_MAX },
	[TEXT_MODULES] = { SMP_MODULES, "modules", HA_TEXT_MODULES_MAX },
	[TEXT_CMDLINES] = { SMP_CMDLINES, "cmdlines", HA_TEXT_CMDLINES_MAX },
};

static bool on_format(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_format m;
	g_autoptr(GError) e = NULL;
	g_autofree char *name = NULL;
	int r = smp_format_decode(&m, f->payload, f->len);

	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	name = g_strndup(m.name, m.name_len);
	/* A name already known keeps its first text, in the parser and in the store
	 * (libtraceevent cannot replace an event): what is stored per boot is what
	 * its parser holds, within the parser's budget (tep.h), across sessions. */
	if (ha_tep_knows(c->tep, name))
		return true;
	if (!ha_tep_add_format(c->tep, name, m.text, m.text_len, &e)) {
		ingest_malformed(c, f, "%s", e->message);
		/* Refused by libtraceevent itself, which may keep part of it: stored as
		 * refused, so that every later session of the boot charges its bytes to
		 * the parser's budget and never parses that name again. */
		if (ha_tep_knows(c->tep, name))
			return ha_store_put_text(c->store, c->boot, "format-refused", name, 0,
						 0, 0, false, f->seq, m.text, m.text_len,
						 error);
		return true;
	}
	if (!strcmp(name, "ftrace/print"))
		ha_marker_format_parse(m.text, m.text_len, &c->marker);
	return ha_store_put_text(c->store, c->boot, "format", name, 0, 0, 0, false, f->seq,
				 m.text, m.text_len, error);
}

static bool on_text(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_text m;
	int r = smp_text_decode(&m, f->payload, f->len), k = 0;
	const IngestTextKind *tk;
	uint64_t cost;

	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	while (k < TEXT_KINDS - 1 && ingest_text_kinds[k].type != f->type)
		k++;
	tk = &ingest_text_kinds[k];
	cost = HA_TEXT_ROW_COST + m.text_len;
	if (c->text_used[k] + cost > tk->budget) {
		c->st.texts_refused++;
		ingest_malformed(c, f, "%s text (generation %u chunk %u, %zu bytes) beyond the"
				 " boot's budget of %" PRIu64 " bytes for them: refused",
				 tk->kind, m.generation, m.chunk, m.text_len, tk->budget);
		return true;
	}
	c->text_used[k] += cost;
	return ha_store_put_text(c->store, c->boot, tk->kind, "", c->stream, m.generation,
				 m.chunk, m.flags & SMP_TEXT_LAST, f->seq, m.text, m.text_len,
				 error);
}

/* A page's events in its CPU's batch (HaPageWalk.user). */
typedef struct {
	HaConn *c;
	CpuBatch *b;
} WalkCtx;

static void batch_event(CpuBatch *b, const HaEvent *ev)
{
	b->events++;
	b->ts_min = MIN(b->ts_min, ev->ts);
	b->ts_max = MAX(b->ts_max, ev->ts);
}

/* Each event of a page, before pagewalk.h feeds it to the pairer. */
static char *on_event(const HaEvent *ev, uint32_t cpu, void *user)
{
	WalkCtx *w = user;

	(void)cpu;
	batch_event(w->b, ev);
	return NULL;
}

/* A clock probe's marker is ours, not a traced event: never paired nor counted. */
static void on_marker(const HaEvent *ev, uint32_t cpu, uint64_t probe, void *user)
{
	WalkCtx *w = user;

	batch_event(w->b, ev);
	if (ha_clock_probe_marker(w->c->clk, probe, ev->ts, cpu) && !w->c->pending_since)
		w->c->pending_since = g_get_monotonic_time();
}

static char *page_key(uint32_t cpu, const uint8_t *data, size_t len)
{
	g_autofree char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, len);

	return g_strdup_printf("%u:%s", cpu, sum);
}

static void add_chunk_pages(uint32_t cpu, const void *data, size_t len, void *user)
{
	GHashTable *set = user;
	g_autoptr(GBytes) raw = ha_chunk_decompress(data, len, NULL);
	const uint8_t *page;
	uint32_t plen;
	size_t off = 0;

	/* a chunk that does not inflate holds nothing to compare with */
	while (raw && ha_chunk_next_page(raw, &off, &page, &plen))
		g_hash_table_add(set, page_key(cpu, page, plen));
}

/*
 * A recovering connection (ha_conn_set_recovered()): whether the boot holds this page
 * already from an earlier recovery. The frames rebuilt from the kernel's structures
 * (postmortem.h) take the seqs after the stream's next, so a second recovery of the
 * same crash gives the same pages under other seqs: their bytes tell them apart.
 */
static bool page_recovered_before(HaConn *c, uint32_t cpu, const uint8_t *data,
				  size_t len, GError **error)
{
	char *key;

	if (!c->recovered_pages) {
		c->recovered_pages = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							   NULL);
		if (!ha_store_pm_recovered_chunks(c->store, c->boot, add_chunk_pages,
						  c->recovered_pages, error))
			return false;
	}
	key = page_key(cpu, data, len);
	if (g_hash_table_contains(c->recovered_pages, key)) {
		g_free(key);
		return true;
	}
	g_hash_table_add(c->recovered_pages, key);
	return false;
}

static bool on_page(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_page m;
	g_autoptr(GError) e = NULL;
	WalkCtx w = { .c = c };
	HaPageWalk pw = { .tep = c->tep, .pair = c->pair, .marker = &c->marker,
			  .on_marker = on_marker, .on_event = on_event, .user = &w };
	int r = smp_page_decode(&m, f->payload, f->len);

	(void)error;	/* pages are stored at the commit (ingest-batch.c) */
	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	if (m.cpu >= c->nr_cpus || m.data_len > c->page_size) {
		ingest_malformed(c, f, "cpu %u (of %u) or page of %zu bytes (page size %u)",
				 m.cpu, c->nr_cpus, m.data_len, c->page_size);
		return true;
	}
	if (c->recovered) {
		g_autoptr(GError) re = NULL;

		if (page_recovered_before(c, m.cpu, m.data, m.data_len, &re)) {
			c->st.recovered_dup_pages++;
			return true;
		}
		if (re) {
			g_propagate_error(error, g_steal_pointer(&re));
			return false;
		}
	}
	w.b = ingest_batch_get(c, m.cpu);
	if (ha_tep_ready(c->tep)) {
		long missed;

		if (ha_pagewalk_page(&pw, m.cpu, m.data, m.data_len, &e) < 0) {
			c->d_bad_pages++;
			ingest_malformed(c, f, "cpu %u: %s", m.cpu, e->message);
			return true;
		}
		missed = ha_tep_missed(c->tep);
		if (missed > 0)
			c->d_missed += (uint64_t)missed;
		else if (missed < 0)
			c->d_missed_uncounted++;
	} else if (!c->warned_unparsed) {
		c->warned_unparsed = true;
		g_warning("%s: boot %s: PAGE seq %" PRIu64 " before the header_page and stack"
			  " event formats: stored unparsed", c->domain, c->boot_str, f->seq);
	}
	ingest_batch_add_page(c, w.b, f->seq, m.data, m.data_len);
	return true;
}

static bool on_stacks(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_delta_rec rec;
	size_t off = 0;
	int r;
	uint32_t slots = c->map_bits ? 2u << c->map_bits : 0;
	uint64_t nrec = 0, added = 0;

	if (c->cur_epoch < 0) {
		ingest_malformed(c, f, "STACKS before the stream's first EPOCH");
		return true;
	}
	/* Check every record first: a frame is applied whole or not at all. */
	while ((r = smp_delta_next(f->payload, f->len, &off, &rec)) == 1) {
		if (rec.kind != SMP_DELTA_STACK ||
		    smp_id_tag(rec.stack_id) != smp_epoch_tag((uint64_t)c->cur_epoch) ||
		    smp_id_slot(rec.stack_id) >= slots) {
			ingest_malformed(c, f, "record at %zu: kind %u id 0x%x not a stack of"
					 " epoch %" PRId64 " (slots %u)", off, rec.kind,
					 rec.stack_id, c->cur_epoch, slots);
			return true;
		}
		nrec++;
	}
	if (r < 0 || off != f->len) {
		ingest_malformed(c, f, "truncated or invalid delta record at offset %zu", off);
		return true;
	}
	/* Records already stored (a re-read after a gap) add no row, but the frame is
	 * refused when all of them might: the bound holds without a query per record. */
	if (c->rows.stacks + nrec > c->lim.max_stacks) {
		c->st.rows_refused++;
		ingest_malformed(c, f, "%" PRIu64 " stacks: the boot holds %" PRIu64 ", the"
				 " limit is %" PRIu64 ": not stored (their events count as"
				 " orphans)", nrec, c->rows.stacks, c->lim.max_stacks);
		return true;
	}
	/*
	 * An id already stored for this epoch is normal when the stack is the same (the
	 * guest re-reads the whole map after a gap); with other frames it is a conflict:
	 * the frame is malformed and none of it stays, the first definition wins.
	 */
	if (!ha_store_stacks_begin(c->store, error))
		return false;
	off = 0;
	while (smp_delta_next(f->payload, f->len, &off, &rec) == 1) {
		bool conflict, one;

		if (!ha_store_put_stack(c->store, c->boot, c->cur_epoch, &rec, &conflict,
					&one, error))
			return false;
		added += one;
		if (conflict) {
			if (!ha_store_stacks_end(c->store, false, error))
				return false;
			ingest_malformed(c, f, "record before offset %zu redefines stack_id 0x%x"
					 " of epoch %" PRId64 " with other frames (the stored"
					 " ones are kept)", off, rec.stack_id, c->cur_epoch);
			return true;
		}
	}
	if (!ha_store_stacks_end(c->store, true, error))
		return false;
	c->rows.stacks += added;
	return true;
}

static bool on_epoch(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_delta_rec rec;
	size_t off = 0;
	bool added;
	int r = smp_delta_next(f->payload, f->len, &off, &rec);

	if (r != 1 || off != f->len || rec.kind != SMP_DELTA_EPOCH) {
		ingest_malformed(c, f, "not exactly one epoch record");
		return true;
	}
	if (rec.epoch > INT64_MAX || (c->cur_epoch >= 0 && rec.epoch < (uint64_t)c->cur_epoch)) {
		ingest_malformed(c, f, "epoch %" PRIu64 " goes back from %" PRId64, rec.epoch,
				 c->cur_epoch);
		return true;
	}
	if (c->rows.epochs >= c->lim.max_epochs && (int64_t)rec.epoch != c->cur_epoch) {
		/* Refused, like a malformed frame: the epoch's STACKS are refused too
		 * (their ids carry its tag) and its events count as orphans. */
		c->st.rows_refused++;
		ingest_malformed(c, f, "epoch %" PRIu64 ": the boot holds %" PRIu64 " epochs,"
				 " the limit: not stored", rec.epoch, c->rows.epochs);
		return true;
	}
	if (!ha_store_put_epoch(c->store, c->boot, rec.epoch, rec.timestamp, &added, error))
		return false;
	c->rows.epochs += added;
	c->cur_epoch = (int64_t)rec.epoch;
	return true;
}

static bool on_lost(HaConn *c, const struct smp_frame *f, GError **error)
{
	struct smp_lost m;
	int r = smp_lost_decode(&m, f->payload, f->len);

	if (r < 0 || m.nr > c->nr_cpus) {
		ingest_malformed(c, f, "%s", r < 0 ? smp_strerror(r) :
				 "more CPUs than HELLO said");
		return true;
	}
	for (uint32_t i = 0; i < m.nr; i++) {
		struct smp_lost_cpu lc;

		smp_lost_cpu(&m, i, &lc);
		if (lc.cpu >= c->nr_cpus) {
			ingest_malformed(c, f, "cpu %u of %u", lc.cpu, c->nr_cpus);
			return true;
		}
	}
	for (uint32_t i = 0; i < m.nr; i++) {
		struct smp_lost_cpu lc;

		smp_lost_cpu(&m, i, &lc);
		if (!ha_store_put_lost(c->store, c->boot, c->stream, &lc, error))
			return false;
	}
	return ha_store_stream_dropped(c->store, c->stream, m.agent_dropped_frames,
				       m.agent_dropped_bytes, error);
}

static bool on_stats(HaConn *c, const struct smp_frame *f, GError **error)
{
	uint32_t nr;
	int r = smp_stats_decode(&nr, f->payload, f->len);

	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct smp_stat s;

		smp_stats_get(f->payload, i, &s);
		if (s.key >= HA_STAT_KEYS) {
			/* unknown: ignored (PROTOCOL.md 4.7), and not a row per key */
			if (!c->warned_stat_key)
				g_message("%s: boot %s: STATS key %u ignored (keys 0..%u are"
					  " stored)", c->domain, c->boot_str, s.key,
					  HA_STAT_KEYS - 1);
			c->warned_stat_key = true;
			continue;
		}
		if (!ha_store_put_stat(c->store, c->boot, c->stream, s.key, s.value, error))
			return false;
	}
	return true;
}

static bool on_bye(HaConn *c, const struct smp_frame *f, GError **error)
{
	uint32_t reason;
	int r = smp_bye_decode(&reason, f->payload, f->len);

	if (r < 0) {
		ingest_malformed(c, f, "%s", smp_strerror(r));
		return true;
	}
	/* Nothing more comes from this boot's ring buffers through this stream. */
	ha_pair_flush(c->pair);
	/* a BYE found in a crashed guest's window never reached the host: the boot
	 * crashed after it (pm-arena.h) */
	if (!c->recovered &&
	    !ha_store_boot_clean(c->store, c->boot, g_get_real_time(), error))
		return false;
	c->bye = true;
	g_message("%s: boot %s stream %016" PRIx64 ": BYE (%s) at seq %" PRIu64, c->domain,
		  c->boot_str, c->stream_id, reason == SMP_BYE_RESTART ? "agent restarting" :
		  "shutdown", f->seq);
	return true;
}

bool ingest_apply(HaConn *c, const struct smp_frame *f, GError **error)
{
	switch (f->type) {
	case SMP_FORMAT:
		return on_format(c, f, error);
	case SMP_KSYMS:
	case SMP_MODULES:
	case SMP_CMDLINES:
		return on_text(c, f, error);
	case SMP_PAGE:
		return on_page(c, f, error);
	case SMP_STACKS:
		return on_stacks(c, f, error);
	case SMP_EPOCH:
		return on_epoch(c, f, error);
	case SMP_LOST:
		return on_lost(c, f, error);
	case SMP_STATS:
		return on_stats(c, f, error);
	case SMP_BYE:
		return on_bye(c, f, error);
	default:
		return true;	/* a newer minor's type: skipped, its seq consumed */
	}
}

/*
 * Where the gap c->gap_lo..gap_hi fell (store.h, table gaps): for every CPU the newest
 * event time the host holds, committed or in the open batch. Exports mark the loss
 * before each CPU's first event after it (export-tracedat.h).
 */
bool ingest_note_gap(HaConn *c, GError **error)
{
	g_autofree int64_t *after = g_new0(int64_t, c->nr_cpus ? c->nr_cpus : 1);

	c->gap_note = false;
	/* Beyond HaLimits.max_gaps per boot, streams.gap_frames alone counts them (a
	 * guest cannot make the host write nr_cpus rows per frame without end). */
	if (c->rows.gaps >= c->lim.max_gaps || !c->nr_cpus)
		return true;
	c->rows.gaps++;
	for (uint32_t cpu = 0; cpu < c->nr_cpus && cpu < c->fill->nr_cpus; cpu++)
		if (c->fill->by_cpu[cpu] && c->fill->by_cpu[cpu]->events)
			after[cpu] = (int64_t)c->fill->by_cpu[cpu]->ts_max;
	/* what a commit in flight holds is stored once it is done: the store's newest
	 * then covers it (the store waits for it) */
	if (!ha_store_begin(c->store, error) ||
	    !ha_store_cpu_newest(c->store, c->boot, c->nr_cpus, after, error))
		return false;
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++)
		if (!ha_store_put_gap(c->store, c->boot, c->stream, c->gap_lo, c->gap_hi, cpu,
				      after[cpu], error))
			return false;
	return true;
}
