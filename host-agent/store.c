// SPDX-License-Identifier: MIT
/* store.c - schema, migrations, transactions (see store.h). */
#include "store.h"
#include "store-int.h"

#include <gio/gio.h>
#include <string.h>
#include <sys/stat.h>

struct _HaStore {
	sqlite3 *db;
	char *path;
	uint64_t serial;	/* ha_store_serial() */
	bool in_txn;
	/* sql -> sqlite3_stmt, keyed by the string's address: every caller passes a
	 * literal, so a lookup hashes a pointer, not the SQL text (the same text at two
	 * addresses is merely prepared twice) */
	GHashTable *stmts;
	/* Lent to a commit thread (ha_store_lend()): @lent is set by the owner's thread
	 * and cleared under @lock by the borrower, whose thread is @borrower once it
	 * took the store. Pairs with the acquire in store_wait(). */
	GMutex lock;
	GCond returned;
	gint lent;
	GThread *borrower;
};

/*
 * Every call that touches the connection starts here: while the store is lent to
 * another thread, wait until it is given back. The fast path, not lent, is one atomic
 * load (acquire: it pairs with the release of g_mutex_unlock() in ha_store_give_back()
 * and with g_atomic_int_set() there, so the borrower's writes are seen).
 */
static void store_wait(HaStore *s)
{
	if (!g_atomic_int_get(&s->lent))
		return;
	g_mutex_lock(&s->lock);
	while (s->lent && s->borrower != g_thread_self())
		g_cond_wait(&s->returned, &s->lock);
	g_mutex_unlock(&s->lock);
}

void ha_store_lend(HaStore *s)
{
	g_mutex_lock(&s->lock);
	g_assert(!s->lent);
	s->borrower = NULL;
	g_atomic_int_set(&s->lent, 1);
	g_mutex_unlock(&s->lock);
}

void ha_store_borrow(HaStore *s)
{
	g_mutex_lock(&s->lock);
	g_assert(s->lent && !s->borrower);
	s->borrower = g_thread_self();
	g_mutex_unlock(&s->lock);
}

void ha_store_give_back(HaStore *s)
{
	g_mutex_lock(&s->lock);
	s->borrower = NULL;
	g_atomic_int_set(&s->lent, 0);
	g_cond_broadcast(&s->returned);
	g_mutex_unlock(&s->lock);
}

void ha_store_wait(HaStore *s)
{
	store_wait(s);
}

/* Migration i brings schema version i to i + 1. Append only. */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE boots("
	" id INTEGER PRIMARY KEY, boot_uuid BLOB NOT NULL UNIQUE, release TEXT,"
	" build_id BLOB, trace_clock TEXT, text_addr INTEGER, nr_cpus INTEGER,"
	" page_size INTEGER, map_bits INTEGER, max_depth INTEGER, flags INTEGER,"
	" start_time INTEGER, last_time INTEGER, end_time INTEGER, ended TEXT,"
	" pair_state BLOB);"
	"CREATE TABLE streams("
	" id INTEGER PRIMARY KEY, boot INTEGER NOT NULL REFERENCES boots(id),"
	" stream_id INTEGER NOT NULL, next_seq INTEGER NOT NULL DEFAULT 1,"
	" gap_frames INTEGER NOT NULL DEFAULT 0, dup_frames INTEGER NOT NULL DEFAULT 0,"
	" malformed INTEGER NOT NULL DEFAULT 0, cur_epoch INTEGER,"
	" dropped_frames INTEGER NOT NULL DEFAULT 0, dropped_bytes INTEGER NOT NULL DEFAULT 0,"
	" orphan_stacks INTEGER NOT NULL DEFAULT 0, bad_pages INTEGER NOT NULL DEFAULT 0,"
	" missed_events INTEGER NOT NULL DEFAULT 0, missed_uncounted INTEGER NOT NULL DEFAULT 0,"
	" UNIQUE(boot, stream_id));"
	"CREATE TABLE epochs(boot INTEGER NOT NULL, epoch INTEGER NOT NULL,"
	" tag INTEGER NOT NULL, start_ts INTEGER NOT NULL, PRIMARY KEY(boot, epoch))"
	" WITHOUT ROWID;"
	"CREATE TABLE stacks(boot INTEGER NOT NULL, epoch INTEGER NOT NULL,"
	" stack_id INTEGER NOT NULL, nr INTEGER NOT NULL, ref_count INTEGER, ips BLOB NOT NULL,"
	" PRIMARY KEY(boot, epoch, stack_id)) WITHOUT ROWID;"
	"CREATE TABLE fullstacks(id INTEGER PRIMARY KEY, boot INTEGER NOT NULL,"
	" ips BLOB NOT NULL, UNIQUE(boot, ips));"
	"CREATE TABLE chunks(id INTEGER PRIMARY KEY, boot INTEGER NOT NULL,"
	" cpu INTEGER NOT NULL, first_seq INTEGER, last_seq INTEGER, ts_min INTEGER,"
	" ts_max INTEGER, nr_pages INTEGER, nr_events INTEGER, nr_traced INTEGER,"
	" raw_bytes INTEGER, data BLOB NOT NULL);"
	"CREATE TABLE stack_counts(boot INTEGER NOT NULL, key INTEGER NOT NULL,"
	" count INTEGER NOT NULL, ts_min INTEGER NOT NULL, ts_max INTEGER NOT NULL,"
	" PRIMARY KEY(boot, key)) WITHOUT ROWID;"
	"CREATE INDEX chunks_boot_ts ON chunks(boot, ts_max);"
	"CREATE TABLE texts(boot INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,"
	" stream INTEGER NOT NULL, generation INTEGER NOT NULL, chunk INTEGER NOT NULL,"
	" last INTEGER NOT NULL DEFAULT 0, seq INTEGER, text BLOB NOT NULL,"
	" PRIMARY KEY(boot, kind, name, stream, generation, chunk)) WITHOUT ROWID;"
	"CREATE TABLE lost(boot INTEGER NOT NULL, stream INTEGER NOT NULL, cpu INTEGER NOT NULL,"
	" overrun INTEGER, commit_overrun INTEGER, dropped_events INTEGER, read_events INTEGER,"
	" PRIMARY KEY(stream, cpu)) WITHOUT ROWID;"
	"CREATE TABLE stats(boot INTEGER NOT NULL, stream INTEGER NOT NULL, key INTEGER NOT NULL,"
	" value INTEGER, PRIMARY KEY(stream, key)) WITHOUT ROWID;",
	/* 1 -> 2: answered clock probes (clocksync.h) */
	"CREATE TABLE clock_samples(boot INTEGER NOT NULL, guest_ts INTEGER NOT NULL,"
	" cpu INTEGER NOT NULL, mono_lo INTEGER NOT NULL, mono_hi INTEGER NOT NULL,"
	" real_lo INTEGER NOT NULL, real_hi INTEGER NOT NULL, boot_off INTEGER NOT NULL,"
	" tai_off INTEGER NOT NULL, PRIMARY KEY(boot, guest_ts, cpu)) WITHOUT ROWID;",
	/* 2 -> 3: where frame gaps fell, per CPU (exports mark them) */
	"CREATE TABLE gaps(boot INTEGER NOT NULL, stream INTEGER NOT NULL,"
	" seq_lo INTEGER NOT NULL, seq_hi INTEGER NOT NULL, cpu INTEGER NOT NULL,"
	" after_ts INTEGER NOT NULL, PRIMARY KEY(stream, seq_lo, cpu)) WITHOUT ROWID;",
	/* 3 -> 4: each boot's rows in the tables whose keys the guest chooses, kept by
	 * triggers in the transaction that adds or removes them (a HELLO reads one row
	 * instead of counting a million stacks); counted once here for older stores */
	"CREATE TABLE boot_rows(boot INTEGER PRIMARY KEY REFERENCES boots(id),"
	" streams INTEGER NOT NULL DEFAULT 0, epochs INTEGER NOT NULL DEFAULT 0,"
	" stacks INTEGER NOT NULL DEFAULT 0, gaps INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO boot_rows(boot, streams, epochs, stacks, gaps) SELECT id,"
	" (SELECT COUNT(*) FROM streams WHERE boot = b.id),"
	" (SELECT COUNT(*) FROM epochs WHERE boot = b.id),"
	" (SELECT COUNT(*) FROM stacks WHERE boot = b.id),"
	" (SELECT COUNT(*) FROM (SELECT DISTINCT stream, seq_lo FROM gaps WHERE boot = b.id))"
	" FROM boots b;"
	"CREATE TRIGGER boot_rows_new AFTER INSERT ON boots BEGIN"
	" INSERT INTO boot_rows(boot) VALUES(NEW.id); END;"
	"CREATE TRIGGER boot_rows_gone BEFORE DELETE ON boots BEGIN"
	" DELETE FROM boot_rows WHERE boot = OLD.id; END;"
	"CREATE TRIGGER boot_rows_stream_add AFTER INSERT ON streams BEGIN"
	" UPDATE boot_rows SET streams = streams + 1 WHERE boot = NEW.boot; END;"
	"CREATE TRIGGER boot_rows_stream_del AFTER DELETE ON streams BEGIN"
	" UPDATE boot_rows SET streams = streams - 1 WHERE boot = OLD.boot; END;"
	"CREATE TRIGGER boot_rows_epoch_add AFTER INSERT ON epochs BEGIN"
	" UPDATE boot_rows SET epochs = epochs + 1 WHERE boot = NEW.boot; END;"
	"CREATE TRIGGER boot_rows_epoch_del AFTER DELETE ON epochs BEGIN"
	" UPDATE boot_rows SET epochs = epochs - 1 WHERE boot = OLD.boot; END;"
	"CREATE TRIGGER boot_rows_stack_add AFTER INSERT ON stacks BEGIN"
	" UPDATE boot_rows SET stacks = stacks + 1 WHERE boot = NEW.boot; END;"
	"CREATE TRIGGER boot_rows_stack_del AFTER DELETE ON stacks BEGIN"
	" UPDATE boot_rows SET stacks = stacks - 1 WHERE boot = OLD.boot; END;"
	/* gaps: distinct (stream, seq_lo), one row per CPU of each */
	"CREATE TRIGGER boot_rows_gap_add AFTER INSERT ON gaps WHEN NOT EXISTS(SELECT 1"
	" FROM gaps WHERE stream = NEW.stream AND seq_lo = NEW.seq_lo AND cpu != NEW.cpu)"
	" BEGIN UPDATE boot_rows SET gaps = gaps + 1 WHERE boot = NEW.boot; END;"
	"CREATE TRIGGER boot_rows_gap_del AFTER DELETE ON gaps WHEN NOT EXISTS(SELECT 1"
	" FROM gaps WHERE stream = OLD.stream AND seq_lo = OLD.seq_lo)"
	" BEGIN UPDATE boot_rows SET gaps = gaps - 1 WHERE boot = OLD.boot; END;",
	/* 4 -> 5: what was recovered from a crashed guest's memory (store-postmortem.h) */
	"CREATE TABLE postmortems(boot INTEGER PRIMARY KEY REFERENCES boots(id),"
	" time INTEGER NOT NULL, source TEXT NOT NULL, status TEXT NOT NULL, message TEXT,"
	" dump_bytes INTEGER, dump_ms INTEGER, recover_ms INTEGER, osrelease TEXT,"
	" kernel_offset INTEGER, kmsg_records INTEGER NOT NULL DEFAULT 0,"
	" kmsg_skipped INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE kmsg(boot INTEGER NOT NULL REFERENCES boots(id), seq INTEGER NOT NULL,"
	" ts_nsec INTEGER NOT NULL, caller_id INTEGER NOT NULL, text BLOB NOT NULL,"
	" recovered INTEGER NOT NULL DEFAULT 1, PRIMARY KEY(boot, seq)) WITHOUT ROWID;"
	"CREATE TRIGGER postmortem_gone BEFORE DELETE ON boots BEGIN"
	" DELETE FROM kmsg WHERE boot = OLD.id; DELETE FROM postmortems WHERE boot = OLD.id;"
	" END;",
	/* 5 -> 6: boot_rows also counts fullstacks and stack_counts rows (their row
	 * limits, ingest.h); counted once here for older stores. An upsert that updates
	 * a stack_counts row fires no INSERT trigger. */
	"ALTER TABLE boot_rows ADD COLUMN fullstacks INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE boot_rows ADD COLUMN counts INTEGER NOT NULL DEFAULT 0;"
	"UPDATE boot_rows SET"
	" fullstacks = (SELECT COUNT(*) FROM fullstacks WHERE boot = boot_rows.boot),"
	" counts = (SELECT COUNT(*) FROM stack_counts WHERE boot = boot_rows.boot);"
	"CREATE TRIGGER boot_rows_fullstack_add AFTER INSERT ON fullstacks BEGIN"
	" UPDATE boot_rows SET fullstacks = fullstacks + 1 WHERE boot = NEW.boot; END;"
	"CREATE TRIGGER boot_rows_fullstack_del AFTER DELETE ON fullstacks BEGIN"
	" UPDATE boot_rows SET fullstacks = fullstacks - 1 WHERE boot = OLD.boot; END;"
	"CREATE TRIGGER boot_rows_count_add AFTER INSERT ON stack_counts BEGIN"
	" UPDATE boot_rows SET counts = counts + 1 WHERE boot = NEW.boot; END;"
	"CREATE TRIGGER boot_rows_count_del AFTER DELETE ON stack_counts BEGIN"
	" UPDATE boot_rows SET counts = counts - 1 WHERE boot = OLD.boot; END;",
	/* 6 -> 7: events recovered from a crashed guest's memory (postmortem.h): their
	 * chunks are marked and never merged with streamed ones (compact.h); the
	 * postmortems row counts what each part of the recovery gave */
	"ALTER TABLE chunks ADD COLUMN recovered INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN stream INTEGER;"
	"ALTER TABLE postmortems ADD COLUMN seam_seq INTEGER;"
	"ALTER TABLE postmortems ADD COLUMN arena_frames INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN ring_pages INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN ring_events INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN map_records INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN frames_stored INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN frames_dup INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE postmortems ADD COLUMN events_stored INTEGER NOT NULL DEFAULT 0;"
	/* the newest ARENA list of each boot (ingest-arena.h), for a post-mortem by a
	 * later host-agent (`recover`, a restart between the announce and the panic) */
	"CREATE TABLE arenas(boot INTEGER PRIMARY KEY REFERENCES boots(id),"
	" stream_id INTEGER NOT NULL, page_size INTEGER NOT NULL, addrs BLOB NOT NULL);"
	"CREATE TRIGGER arena_gone BEFORE DELETE ON boots BEGIN"
	" DELETE FROM arenas WHERE boot = OLD.id; END;",
};

bool ha_store_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!g_ascii_isalnum(name[i]) && !strchr("_.-", name[i]))
			return false;
	return true;
}

void ha_store_set_error(HaStore *s, GError **error, const char *what)
{
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s: %s", s->path, what,
		    sqlite3_errmsg(s->db));
}

bool ha_store_exec(HaStore *s, const char *sql, GError **error)
{
	char *msg = NULL;

	store_wait(s);
	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", s->path,
			    msg ? msg : "sqlite error");
		sqlite3_free(msg);
		return false;
	}
	return true;
}

static bool migrate(HaStore *s, GError **error)
{
	sqlite3_stmt *st;
	int version;

	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK) {
		ha_store_set_error(s, error, "user_version");
		return false;
	}
	sqlite3_step(st);
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > HA_STORE_SCHEMA) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "%s: schema version %d is newer than this host-agent (%d)",
			    s->path, version, HA_STORE_SCHEMA);
		return false;
	}
	for (; version < HA_STORE_SCHEMA; version++) {
		g_autofree char *bump = g_strdup_printf("PRAGMA user_version = %d",
							version + 1);

		if (!ha_store_exec(s, "BEGIN IMMEDIATE", error))
			return false;
		if (!ha_store_exec(s, migrations[version], error) ||
		    !ha_store_exec(s, bump, error)) {
			ha_store_exec(s, "ROLLBACK", NULL);
			return false;
		}
		if (!ha_store_exec(s, "COMMIT", error))
			return false;
		g_message("%s: schema migrated to version %d", s->path, version + 1);
	}
	return true;
}

/* Stores opened by this process, for ha_store_serial(). */
static gint store_serials;

uint64_t ha_store_serial(const HaStore *s)
{
	return s->serial;
}

static void stmt_free(gpointer p)
{
	sqlite3_finalize(p);
}

HaStore *ha_store_open(const char *path, bool readonly, GError **error)
{
	g_autoptr(HaStore) s = g_new0(HaStore, 1);
	int flags = readonly ? SQLITE_OPEN_READONLY
			     : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;

	s->path = g_strdup(path);
	s->serial = (uint64_t)g_atomic_int_add(&store_serials, 1) + 1;
	g_mutex_init(&s->lock);
	g_cond_init(&s->returned);
	s->stmts = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, stmt_free);
	if (sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		ha_store_set_error(s, error, "open");
		return NULL;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (readonly) {
		sqlite3_stmt *st;
		int version = -1;

		if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) ==
		    SQLITE_OK) {
			if (sqlite3_step(st) == SQLITE_ROW)
				version = sqlite3_column_int(st, 0);
			sqlite3_finalize(st);
		}
		if (version != HA_STORE_SCHEMA) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
				    "%s: not a host-agent store of schema %d (found %d)",
				    path, HA_STORE_SCHEMA, version);
			return NULL;
		}
		return g_steal_pointer(&s);
	}
	if (!ha_store_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
			   "PRAGMA journal_size_limit=67108864;"
			   "PRAGMA foreign_keys=ON;", error) ||
	    !migrate(s, error))
		return NULL;
	return g_steal_pointer(&s);
}

void ha_store_free(HaStore *s)
{
	if (!s)
		return;
	store_wait(s);
	if (s->stmts)
		g_hash_table_destroy(s->stmts);
	if (s->db) {
		if (s->in_txn)
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(s->db);
	}
	g_free(s->path);
	g_mutex_clear(&s->lock);
	g_cond_clear(&s->returned);
	g_free(s);
}

sqlite3 *ha_store_db(HaStore *s)
{
	store_wait(s);
	return s->db;
}

const char *ha_store_path(HaStore *s)
{
	return s->path;
}

/* A cached statement left after its last row keeps a read open: reset them all. */
static void reset_stmts(HaStore *s)
{
	GHashTableIter it;
	gpointer k, v;

	g_hash_table_iter_init(&it, s->stmts);
	while (g_hash_table_iter_next(&it, &k, &v))
		sqlite3_reset(v);
}

bool ha_store_begin(HaStore *s, GError **error)
{
	store_wait(s);
	if (s->in_txn)
		return true;
	reset_stmts(s);
	if (!ha_store_exec(s, "BEGIN IMMEDIATE", error))
		return false;
	s->in_txn = true;
	return true;
}

bool ha_store_commit(HaStore *s, GError **error)
{
	store_wait(s);
	if (!s->in_txn)
		return true;
	reset_stmts(s);
	if (!ha_store_exec(s, "COMMIT", error)) {
		ha_store_rollback(s);
		return false;
	}
	s->in_txn = false;
	return true;
}

void ha_store_rollback(HaStore *s)
{
	store_wait(s);
	reset_stmts(s);
	if (s->in_txn)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	s->in_txn = false;
}

bool ha_store_in_txn(HaStore *s)
{
	store_wait(s);
	return s->in_txn;
}

bool ha_store_read_begin(HaStore *s, GError **error)
{
	return ha_store_exec(s, "BEGIN", error);
}

void ha_store_read_end(HaStore *s)
{
	/* a read transaction has nothing to commit: a failure changes nothing */
	ha_store_exec(s, "COMMIT", NULL);
}

sqlite3_stmt *ha_store_stmt(HaStore *s, const char *sql, GError **error)
{
	sqlite3_stmt *st;

	store_wait(s);
	st = g_hash_table_lookup(s->stmts, sql);
	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		ha_store_set_error(s, error, sql);
		return NULL;
	}
	g_hash_table_insert(s->stmts, (gpointer)sql, st);
	return st;
}

uint64_t ha_store_disk_bytes(HaStore *s)
{
	g_autofree char *wal = g_strconcat(s->path, "-wal", NULL);
	struct stat a, b;
	uint64_t n = 0;

	if (stat(s->path, &a) == 0)
		n += (uint64_t)a.st_size;
	if (stat(wal, &b) == 0)
		n += (uint64_t)b.st_size;
	return n;
}

bool ha_store_done(HaStore *s, sqlite3_stmt *st, int rc, GError **error, const char *what)
{
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		ha_store_set_error(s, error, what);
		return false;
	}
	return true;
}

bool ha_store_one_u64(HaStore *s, sqlite3_stmt *st, uint64_t *ret, GError **error,
		      const char *what)
{
	bool row = sqlite3_step(st) == SQLITE_ROW;

	if (row)
		*ret = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (!row) {
		ha_store_set_error(s, error, what);
		return false;
	}
	return true;
}

char *ha_store_col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? g_strdup((const char *)t) : NULL;
}

GBytes *ha_store_col_bytes(sqlite3_stmt *st, int i)
{
	const void *p = sqlite3_column_blob(st, i);
	int n = sqlite3_column_bytes(st, i);

	return p && n > 0 ? g_bytes_new(p, (gsize)n) : NULL;
}
