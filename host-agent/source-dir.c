// SPDX-License-Identifier: MIT
/* source-dir.c - `--socket-dir`: one source per VM socket in a directory (source.h). */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qmp.h"
#include "store.h"

/* File descriptors one VM may use: its connection, QMP, the database, its WAL and
 * shared-memory files, the lock, and a spare for a connect() in progress. */
#define FDS_PER_VM	8u
#define FDS_RESERVED	64u

typedef struct {
	dev_t dev;
	ino_t ino;
} FileId;

typedef struct {
	char *name;
	FileId sock;		/* the .sock we serve; another inode is another QEMU */
	FileId qmp_id;
	int lock_fd;
	HaStore *store;
	HaSource *src;
	HaQmp *qmp;
	bool gone;		/* .sock removed or replaced: drop once disconnected */
} DirVm;

struct _HaDirSource {
	char *dir;
	char *state_dir;
	HaLimits limits;
	HaPmOpts pm;		/* ha_dir_source_set_postmortem(); pm.enabled false: none */
	unsigned int max_vms;
	GFileMonitor *mon;
	guint rescan_timer;
	guint rescan_idle;
	GHashTable *vms;	/* name -> DirVm * */
	GHashTable *refused;	/* file names already logged as refused (set) */
};

static void vm_free(gpointer p)
{
	DirVm *v = p;

	if (!v)
		return;
	ha_qmp_free(v->qmp);
	ha_source_free(v->src);	/* records how the stream ended */
	ha_store_free(v->store);
	if (v->lock_fd >= 0)
		close(v->lock_fd);
	g_free(v->name);
	g_free(v);
}

/* A socket in the directory: its identity, or false when it is not one. */
static bool socket_at(const char *path, FileId *ret)
{
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	ret->dev = st.st_dev;
	ret->ino = st.st_ino;
	return true;
}

static bool same_file(const FileId *a, const FileId *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static char *vm_path(HaDirSource *d, const char *name, const char *suffix)
{
	g_autofree char *file = g_strconcat(name, suffix, NULL);

	return g_build_filename(d->dir, file, NULL);
}

static DirVm *vm_open(HaDirSource *d, const char *name, const FileId *id, GError **error)
{
	g_autofree char *file = g_strconcat(name, ".db", NULL);
	g_autofree char *db = g_build_filename(d->state_dir, file, NULL);
	g_autofree char *lock = g_strconcat(db, ".lock", NULL);
	g_autofree char *sock = vm_path(d, name, ".sock");
	DirVm *v = g_new0(DirVm, 1);

	v->name = g_strdup(name);
	v->sock = *id;
	v->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (v->lock_fd < 0 || flock(v->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY, "%s: %s", lock,
			    v->lock_fd < 0 ? g_strerror(errno) :
			    "another host-agent is already storing this domain");
		vm_free(v);
		return NULL;
	}
	v->store = ha_store_open(db, false, error);
	if (!v->store) {
		vm_free(v);
		return NULL;
	}
	v->src = ha_source_new_socket(sock, false, v->store, &d->limits, name, error);
	if (!v->src || !ha_source_start(v->src, error)) {
		vm_free(v);
		return NULL;
	}
	g_message("VM %s: serving %s, storing into %s", name, sock, db);
	return v;
}

/* NAME.qmp beside the VM's socket: watch it while it is there. */
static void vm_sync_qmp(HaDirSource *d, DirVm *v)
{
	g_autofree char *path = vm_path(d, v->name, ".qmp");
	FileId id;
	bool there = socket_at(path, &id);

	if (v->qmp && (!there || !same_file(&id, &v->qmp_id))) {
		g_clear_pointer(&v->qmp, ha_qmp_free);
		g_message("VM %s: QMP socket %s %s", v->name, path,
			  there ? "replaced" : "removed");
	}
	if (there && !v->qmp && !v->gone) {
		v->qmp = ha_qmp_new(path, v->store, v->name);
		v->qmp_id = id;
		if (d->pm.enabled)
			ha_qmp_set_postmortem(v->qmp, &d->pm);
		ha_qmp_start(v->qmp);
	}
}

/* Log a refused file name once (the rescan sees it again every time). */
static void refuse(HaDirSource *d, const char *file, const char *why)
{
	if (g_hash_table_contains(d->refused, file))
		return;
	g_warning("%s/%s: %s", d->dir, file, why);
	g_hash_table_add(d->refused, g_strdup(file));
}

/* Bring the served VMs in line with the directory's sockets. */
static void rescan(HaDirSource *d)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(GDir) dir = g_dir_open(d->dir, 0, &e);
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							   g_free);
	g_autoptr(GHashTable) refused = g_hash_table_new_full(g_str_hash, g_str_equal,
							      g_free, NULL);
	GHashTableIter it;
	gpointer k, val;
	const char *file;

	if (!dir) {
		g_warning("socket dir: %s", e->message);
		return;	/* keep serving what is connected; the next rescan retries */
	}
	while ((file = g_dir_read_name(dir))) {
		g_autofree char *path = NULL;
		g_autofree char *name = NULL;
		FileId id;

		if (!g_str_has_suffix(file, ".sock"))
			continue;
		path = g_build_filename(d->dir, file, NULL);
		if (!socket_at(path, &id))
			continue;
		name = g_strndup(file, strlen(file) - strlen(".sock"));
		if (!ha_store_name_ok(name)) {
			refuse(d, file, "not a usable VM name ([A-Za-z0-9_.-], 1-64, no leading"
			       " '.'): skipped");
			g_hash_table_add(refused, g_strdup(file));
			continue;
		}
		g_hash_table_insert(seen, g_steal_pointer(&name), g_memdup2(&id, sizeof(id)));
	}
	/* Forget the refusals of files gone, so that a new one is logged again. */
	g_hash_table_iter_init(&it, d->refused);
	while (g_hash_table_iter_next(&it, &k, NULL))
		if (!g_hash_table_contains(refused, k) && !g_hash_table_contains(seen, k))
			g_hash_table_iter_remove(&it);

	g_hash_table_iter_init(&it, d->vms);
	while (g_hash_table_iter_next(&it, &k, &val)) {
		DirVm *v = val;
		FileId *now = g_hash_table_lookup(seen, k);

		if (!v->gone && (!now || !same_file(now, &v->sock))) {
			v->gone = true;
			g_message("VM %s: socket %s; served until its connection ends", v->name,
				  now ? "replaced" : "removed");
		}
		if (v->gone && !ha_source_connected(v->src)) {
			g_message("VM %s: disconnected, no longer served", v->name);
			g_hash_table_iter_remove(&it);
			continue;
		}
		vm_sync_qmp(d, v);
	}

	g_hash_table_iter_init(&it, seen);
	while (g_hash_table_iter_next(&it, &k, &val)) {
		g_autofree char *file_name = g_strconcat(k, ".sock", NULL);
		DirVm *v;

		if (g_hash_table_contains(d->vms, k))
			continue;	/* served, or the old one still draining */
		if (g_hash_table_size(d->vms) >= d->max_vms) {
			g_autofree char *why = g_strdup_printf("already serving %u VMs (the limit"
							       "): not served", d->max_vms);

			refuse(d, file_name, why);
			continue;
		}
		v = vm_open(d, k, val, &e);
		if (!v) {
			g_autofree char *why = g_strdup_printf("not served: %s", e->message);

			refuse(d, file_name, why);
			g_clear_error(&e);
			continue;
		}
		g_hash_table_remove(d->refused, file_name);
		g_hash_table_insert(d->vms, g_strdup(k), v);
		vm_sync_qmp(d, v);
	}
}

static gboolean on_rescan_idle(gpointer user)
{
	HaDirSource *d = user;

	d->rescan_idle = 0;
	rescan(d);
	return G_SOURCE_REMOVE;
}

static gboolean on_rescan_timer(gpointer user)
{
	rescan(user);
	return G_SOURCE_CONTINUE;
}

/* Whatever changed, rescan once the burst of events is handled. */
static void on_changed(GFileMonitor *mon, GFile *file, GFile *other,
		       GFileMonitorEvent event, gpointer user)
{
	HaDirSource *d = user;

	if (!d->rescan_idle)
		d->rescan_idle = g_idle_add(on_rescan_idle, d);
}

/* How many VMs the process's file descriptor limit allows (raised to its maximum). */
static unsigned int fd_budget(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 16;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	n = rl.rlim_cur;
	if (n == RLIM_INFINITY || n > FDS_RESERVED + (rlim_t)HA_DIR_MAX_VMS * FDS_PER_VM)
		return HA_DIR_MAX_VMS;
	return n > FDS_RESERVED + FDS_PER_VM ? (unsigned int)((n - FDS_RESERVED) / FDS_PER_VM) :
	       1;
}

void ha_dir_source_set_postmortem(HaDirSource *d, const HaPmOpts *o)
{
	d->pm = *o;
	d->pm.dump_dir = d->state_dir;	/* each VM's core is STATE-DIR/NAME.core */
}

HaDirSource *ha_dir_source_new(const char *dir, const char *state_dir,
			       const HaLimits *limits, GError **error)
{
	g_autoptr(GFile) gdir = g_file_new_for_path(dir);
	HaDirSource *d;

	if (g_mkdir_with_parents(dir, 0750) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
			    "cannot create %s: %s", dir, g_strerror(errno));
		return NULL;
	}
	d = g_new0(HaDirSource, 1);
	d->dir = g_strdup(dir);
	d->state_dir = g_strdup(state_dir);
	d->limits = *limits;
	d->max_vms = fd_budget();
	d->vms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, vm_free);
	d->refused = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	d->mon = g_file_monitor_directory(gdir, G_FILE_MONITOR_WATCH_MOVES, NULL, error);
	if (!d->mon) {
		ha_dir_source_free(d);
		return NULL;
	}
	return d;
}

void ha_dir_source_start(HaDirSource *d)
{
	g_signal_connect(d->mon, "changed", G_CALLBACK(on_changed), d);
	d->rescan_timer = g_timeout_add(HA_DIR_RESCAN_MS, on_rescan_timer, d);
	g_message("socket dir %s: watching for NAME.sock (and NAME.qmp), up to %u VMs",
		  d->dir, d->max_vms);
	rescan(d);
}

void ha_dir_source_free(HaDirSource *d)
{
	if (!d)
		return;
	if (d->mon) {
		g_signal_handlers_disconnect_by_data(d->mon, d);
		g_file_monitor_cancel(d->mon);
		g_object_unref(d->mon);
	}
	if (d->rescan_timer)
		g_source_remove(d->rescan_timer);
	if (d->rescan_idle)
		g_source_remove(d->rescan_idle);
	g_hash_table_destroy(d->vms);
	g_hash_table_destroy(d->refused);
	g_free(d->dir);
	g_free(d->state_dir);
	g_free(d);
}
