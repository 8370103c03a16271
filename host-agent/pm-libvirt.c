// SPDX-License-Identifier: MIT
/*
 * pm-libvirt.c - the post-mortem of a crashed libvirt domain (see pm-libvirt.h).
 *
 * What libvirt 9.0's QEMU driver does on a guest panic (processGuestPanicEvent()):
 * it takes an async job on the domain, sets it crashed, queues the CRASHED event, and
 * then, in the same job, acts on on_crash. Measured on Debian 12 (libvirt 9.0, QEMU
 * 7.2, a 512 MiB TCG domain of the libvirt tests, with `virsh event --all --loop`
 * and the files):
 *   preserve          nothing more: QEMU (started with -no-shutdown) keeps the guest
 *                     stopped, memory and all; the domain stays `crashed (panicked)`
 *                     until destroyed. Our dump took 0.8 to 1.8 s, `virsh dump
 *                     --memory-only` of the same domain 1.5 s.
 *   coredump-destroy  libvirt's own memory-only dump, into its auto_dump_path
 *                     (qemu.conf; /var/lib/libvirt/qemu/dump), a file named
 *                     ID-NAME-YYYY-MM-DD-HH:MM:SS (root, 0600), already created when
 *                     CRASHED reaches us and complete 1.5 s later; STOPPED (CRASHED)
 *                     came 3.7 s after CRASHED, the domain `shut off (crashed)`
 *   coredump-restart  the same dump (1.6 s), then RESUMED and libvirt's fake reboot
 *                     (the test domain has on_reboot destroy: SHUTDOWN, STOPPED)
 *   destroy, restart  (libvirt's code, not measured) the same without the dump
 * A dump of ours would wait for that job (virDomainCoreDumpWithFormat takes one too;
 * libvirt's code, not tried), so with coredump-* or destroy it would come after the
 * guest is gone. Only `preserve` leaves memory for a dump of ours. With coredump-* we
 * read libvirt's file instead, once the job is past it: the next lifecycle event
 * after CRASHED (STOPPED, RESUMED, STARTED) says so. It is found by what libvirt
 * names it: in qemu.conf's auto_dump_path (/etc/libvirt/qemu.conf, qemu:///system
 * only: a session daemon's or a remote one's directory is not known here), the newest
 * regular file named ID-NAME- (the domain's id, a dash, at most 20 bytes of its name:
 * virDomainDefGetShortName()) modified at or after the CRASHED event. It is libvirt's,
 * asked for by the user: never deleted.
 *
 * The dump is libvirtd's (it opens the file and hands QEMU the descriptor), so the
 * core path must be absolute and the state directory on libvirtd's host: a remote
 * URI (qemu+ssh://) writes the core on the remote host, where we cannot read it (the
 * recovery then fails with the open error, stored in the postmortems row).
 */
#include "pm-libvirt.h"

#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <libvirt/virterror.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "libvirt-err.h"
#include "conn-driver.h"
#include "store-postmortem.h"

#define PM_SOURCE	"libvirt virDomainCoreDumpWithFormat"
#define PM_SOURCE_AUTO	"libvirt's own dump (on_crash coredump-*)"

static HaPmOpts pm_opts;	/* ha_lv_pm_configure(); pm_opts.enabled false: none */
static char *pm_dir;		/* pm_opts.dump_dir, owned, absolute */

void ha_lv_pm_configure(const HaPmOpts *o)
{
	pm_opts = *o;
	g_free(pm_dir);
	/* libvirtd opens the path, from its own working directory */
	pm_dir = g_canonicalize_filename(o->dump_dir ? o->dump_dir : ".", NULL);
	pm_opts.dump_dir = pm_dir;
}

struct _HaLvPm {
	HaStore *store;		/* borrowed */
	char *label;
	char *core;		/* STATE-DIR/label.core, absolute */
	HaPmOpts o;
	bool busy;		/* a post-mortem runs: a later CRASHED is ignored */
	bool in_flight;		/* a GTask runs (its callback clears it) */
	bool dump_task;		/* ... and it is the one that may dump into core */
	bool closing;		/* freed while in flight: the task's callback frees it */
	int64_t since_us;	/* the crashed boot's marking is at or after this */
	int64_t crash_us;	/* monotonic time of CRASHED */
	int64_t crash_real_us;	/* real time of CRASHED */

	/* coredump-*: libvirt's own dump (top of this file) */
	char *prefix;		/* "ID-NAME-" of its file name */
	char *auto_dir;		/* where libvirt writes it, NULL: not known */
	bool settled;		/* a lifecycle event came after CRASHED: the job is past it */
	bool awaiting;		/* read libvirt's dump once settled */
};

/* The worker's input (its own domain reference and copies) and what it found: the
 * GTask's data, read by the callback once the task returned. */
typedef struct {
	virDomainPtr dom;
	char *core;
	char *dir;
	uint64_t max_bytes;

	char *action;		/* on_crash, as the live XML says */
	uint64_t ram;		/* the domain's memory, bytes */
	int64_t dump_ms;
	bool no_memory;		/* nothing to dump: the error is a log line, no row */
	bool libvirt_dumps;	/* on_crash coredump-*: libvirt's dump is read instead */
	bool wrote_core;	/* virDomainCoreDumpWithFormat was called: core may exist */
	char *auto_dir;		/* its auto_dump_path, NULL when not known */
	char *found;		/* the second task: libvirt's dump file */
	int64_t since_s;	/* the second task: newer than this (real time, s) */
	char *prefix;		/* the second task: "ID-NAME-" */
} DumpJob;

static void dump_job_free(DumpJob *j)
{
	virDomainFree(j->dom);
	g_free(j->core);
	g_free(j->dir);
	g_free(j->action);
	g_free(j->auto_dir);
	g_free(j->found);
	g_free(j->prefix);
	g_free(j);
}

/* <on_crash>ACTION</on_crash> of @xml (libvirtd's own output, one element), or
 * "destroy", libvirt's default when the element is absent. */
static char *on_crash_of(const char *xml)
{
	const char *p = strstr(xml, "<on_crash>"), *end;

	if (!p)
		return g_strdup("destroy");
	p += strlen("<on_crash>");
	end = strstr(p, "</on_crash>");
	if (!end || end - p > 64)
		return g_strdup("?");
	return g_strstrip(g_strndup(p, (gsize)(end - p)));
}

/* In the worker: libvirt's last error as @error, prefixed with @what. */
static void set_lv_error(GError **error, const char *what)
{
	g_autofree char *why = ha_lv_error();

	g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", what, why);
}

/* libvirt's auto_dump_path for the connection @uri: qemu.conf's, else libvirt's default
 * (/var/lib/libvirt/qemu/dump); NULL when not a local system daemon. qemu.conf is
 * root's configuration, read as libvirt's own `key = "value"` lines. */
static char *auto_dump_dir(const char *uri)
{
	g_autofree char *conf = NULL;
	g_auto(GStrv) lines = NULL;
	char *dir = NULL;

	if (!uri || !g_str_has_prefix(uri, "qemu:///system"))
		return NULL;
	if (g_file_get_contents("/etc/libvirt/qemu.conf", &conf, NULL, NULL)) {
		lines = g_strsplit(conf, "\n", -1);
		for (char **l = lines; *l; l++) {
			char *p = g_strstrip(*l), *q;

			if (!g_str_has_prefix(p, "auto_dump_path"))
				continue;
			p = g_strchug(p + strlen("auto_dump_path"));
			if (*p != '=')
				continue;
			p = g_strchug(p + 1);
			if (*p != '"' || !(q = strchr(p + 1, '"')) || q == p + 1)
				continue;
			g_free(dir);	/* the last one counts */
			dir = g_strndup(p + 1, (gsize)(q - p - 1));
		}
	}
	return dir ? dir : g_strdup("/var/lib/libvirt/qemu/dump");
}

/* The second task, in a worker thread: the newest regular file of j->auto_dir named
 * j->prefix... and modified at or after j->since_s. */
static bool find_in_thread(DumpJob *j, GError **error)
{
	g_autoptr(GDir) d = g_dir_open(j->auto_dir, 0, error);
	const char *name;
	int64_t best = -1;

	if (!d) {
		g_prefix_error(error, "libvirt's dump: ");
		return false;
	}
	while ((name = g_dir_read_name(d))) {
		g_autofree char *path = NULL;
		struct stat st;

		if (!g_str_has_prefix(name, j->prefix))
			continue;
		path = g_build_filename(j->auto_dir, name, NULL);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_mtime < j->since_s ||
		    st.st_mtime <= best)
			continue;
		best = st.st_mtime;
		g_free(j->found);
		j->found = g_steal_pointer(&path);
	}
	if (!j->found) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "libvirt's dump: no file %s* in %s written since the crash",
			    j->prefix, j->auto_dir);
		return false;
	}
	return true;
}

/* The blocking part, in a worker thread: on_crash, the guards, the dump. */
static bool dump_in_thread(DumpJob *j, GError **error)
{
	g_autofree char *xml = virDomainGetXMLDesc(j->dom, 0);
	virDomainInfo info;
	struct statvfs vfs;
	int64_t t0;

	if (!xml) {
		set_lv_error(error, "virDomainGetXMLDesc");
		return false;
	}
	j->action = on_crash_of(xml);
	if (g_str_has_prefix(j->action, "coredump-")) {
		g_autofree char *uri = virConnectGetURI(virDomainGetConnect(j->dom));

		j->libvirt_dumps = true;
		j->auto_dir = auto_dump_dir(uri);
		return true;
	}
	if (strcmp(j->action, "preserve") != 0 || virDomainIsActive(j->dom) != 1) {
		/* libvirt has already destroyed or reset the guest, or will as soon as
		 * its own dump (coredump-*) is written: see the top of this file. */
		j->no_memory = true;
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "on_crash is %s: libvirt %s the guest, no memory to read"
			    " (<on_crash>preserve</on_crash> keeps it)", j->action,
			    strcmp(j->action, "preserve") == 0 ? "no longer runs" :
			    g_str_has_suffix(j->action, "restart") ? "resets" : "destroys");
		return false;
	}
	if (virDomainGetInfo(j->dom, &info) < 0) {
		set_lv_error(error, "virDomainGetInfo");
		return false;
	}
	j->ram = (uint64_t)info.maxMem << 10;	/* KiB: what dump-guest-memory writes */
	if (j->ram == 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "libvirt did not say the domain's memory size");
		return false;
	}
	if (j->ram > j->max_bytes) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "guest RAM %" PRIu64 " MiB is over --dump-max-mb %" PRIu64
			    ": not dumped", j->ram >> 20, j->max_bytes >> 20);
		return false;
	}
	/* the core is the RAM plus headers and notes: keep 64 MiB beyond it free */
	if (statvfs(j->dir, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < j->ram + (64ull << 20)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
			    "%s has %" PRIu64 " MiB free, the dump needs %" PRIu64
			    " MiB: not dumped", j->dir,
			    ((uint64_t)vfs.f_bavail * vfs.f_frsize) >> 20, (j->ram >> 20) + 64);
		return false;
	}
	g_message("post-mortem: dumping %" PRIu64 " MiB of guest memory into %s",
		  j->ram >> 20, j->core);
	t0 = g_get_monotonic_time();
	j->wrote_core = true;
	if (virDomainCoreDumpWithFormat(j->dom, j->core, VIR_DOMAIN_CORE_DUMP_FORMAT_RAW,
					VIR_DUMP_MEMORY_ONLY) < 0) {
		set_lv_error(error, "virDomainCoreDumpWithFormat");
		unlink(j->core);	/* a partial core, if any */
		return false;
	}
	j->dump_ms = (g_get_monotonic_time() - t0) / 1000;
	return true;
}

static void dump_thread(GTask *task, gpointer source, gpointer data, GCancellable *c)
{
	GError *e = NULL;

	DumpJob *j = data;

	if (j->prefix ? find_in_thread(j, &e) : dump_in_thread(j, &e))
		g_task_return_boolean(task, TRUE);
	else
		g_task_return_error(task, e);
}

static void pm_destroy(HaLvPm *pm)
{
	g_free(pm->label);
	g_free(pm->core);
	g_free(pm->prefix);
	g_free(pm->auto_dir);
	g_free(pm);
}

/* A post-mortem that could not read memory: a postmortems row saying why. */
static void pm_fail(HaLvPm *pm, const char *source, const char *why)
{
	/* the store's connection runs on its own thread: it waits meanwhile */
	g_autoptr(HaDriverHold) hold = ha_driver_hold_store(pm->store);
	g_autoptr(GError) e = NULL;
	int64_t boot = ha_store_pm_crashed_boot(pm->store, pm->since_us, &e);
	HaPmRow row = {
		.time_us = g_get_real_time(), .source = source, .status = "failed",
		.message = why, .dump_ms = -1, .recover_ms = -1, .kernel_offset = -1,
	};

	g_warning("%s: post-mortem: %s", pm->label, why);
	if (boot < 0)
		g_warning("%s: post-mortem: %s", pm->label, e->message);
	else if (boot == 0)
		g_warning("%s: post-mortem: no crashed boot to record it in", pm->label);
	else if (!ha_store_pm_save(pm->store, boot, &row, NULL, &e))
		g_warning("%s: post-mortem: %s", pm->label, e->message);
}

static void on_dumped(GObject *unused, GAsyncResult *res, gpointer user);

/* The second task: find libvirt's dump (its job is past it: pm->settled). */
static void start_find(HaLvPm *pm)
{
	g_autoptr(GTask) task = g_task_new(NULL, NULL, on_dumped, pm);
	DumpJob *j = g_new0(DumpJob, 1);

	pm->awaiting = false;
	pm->in_flight = true;
	pm->dump_task = false;
	j->auto_dir = g_strdup(pm->auto_dir);
	j->prefix = g_strdup(pm->prefix);
	j->since_s = pm->crash_real_us / G_USEC_PER_SEC - 1;	/* its mtime's second */
	g_task_set_task_data(task, j, (GDestroyNotify)dump_job_free);
	g_task_run_in_thread(task, dump_thread);
}

/* on_crash coredump-*: libvirt dumps the guest itself; read its file once written. */
static void read_libvirt_dump(HaLvPm *pm, DumpJob *j)
{
	if (!j->auto_dir) {
		pm->busy = false;
		g_message("%s: post-mortem: on_crash is %s: libvirt dumps the guest itself,"
			  " into a directory known only for a local qemu:///system (its"
			  " qemu.conf auto_dump_path); `host-agent recover FILE` reads it",
			  pm->label, j->action);
		return;
	}
	g_message("%s: post-mortem: on_crash is %s: libvirt dumps the guest itself into"
		  " %s; reading its %s* once written", pm->label, j->action, j->auto_dir,
		  pm->prefix);
	pm->auto_dir = g_strdup(j->auto_dir);
	pm->busy = true;	/* until the second task is done */
	if (pm->settled)
		start_find(pm);
	else
		pm->awaiting = true;
}

/* The second task's end: read libvirt's dump into the crashed boot, keep the file. */
static void on_found(HaLvPm *pm, DumpJob *j, GError *find_error)
{
	/* the store's connection runs on its own thread: it waits meanwhile */
	g_autoptr(HaDriverHold) hold = ha_driver_hold_store(pm->store);
	g_autoptr(GError) e = NULL;
	int64_t boot;

	if (!j->found) {
		pm_fail(pm, PM_SOURCE_AUTO, find_error->message);
		return;
	}
	g_message("%s: post-mortem: libvirt's dump is %s", pm->label, j->found);
	boot = ha_store_pm_crashed_boot(pm->store, pm->since_us, &e);
	if (boot <= 0)
		g_warning("%s: post-mortem: no crashed boot to join the dump to%s%s",
			  pm->label, e ? ": " : "", e ? e->message : "");
	else if (!ha_postmortem_recover(pm->store, boot, j->found,
							 HA_PM_SOURCE_LIBVIRT_OWN, -1, &e))
		g_warning("%s: post-mortem of boot %" PRId64 ": %s", pm->label, boot,
			  e->message);
	else
		g_message("%s: post-mortem of boot %" PRId64 " ready %.3f s after CRASHED"
			  " (libvirt's dump)", pm->label, boot,
			  (double)(g_get_monotonic_time() - pm->crash_us) / 1e6);
	g_message("%s: post-mortem finished; libvirt's dump stays where libvirt wrote it"
		  " (on_crash coredump-*)", pm->label);
}

/* Back on the main loop: read the core into the crashed boot. */
static void on_dumped(GObject *unused, GAsyncResult *res, gpointer user)
{
	HaLvPm *pm = user;
	GTask *task = G_TASK(res);
	DumpJob *j = g_task_get_task_data(task);
	g_autoptr(GError) e = NULL;
	bool dumped = g_task_propagate_boolean(task, &e);
	int64_t boot;

	pm->busy = pm->in_flight = false;
	if (pm->closing) {
		if (j->wrote_core)
			unlink(pm->core);	/* created after ha_lv_pm_free() unlinked it */
		pm_destroy(pm);
		return;
	}
	if (dumped && j->libvirt_dumps) {
		read_libvirt_dump(pm, j);
		return;
	}
	if (j->prefix) {
		on_found(pm, j, e);
		return;
	}
	if (!dumped && j->no_memory) {
		g_message("%s: post-mortem: %s", pm->label, e->message);
		return;
	}
	if (!dumped) {
		pm_fail(pm, PM_SOURCE, e->message);
	} else {
		/* the store's connection runs on its own thread: it waits meanwhile */
		g_autoptr(HaDriverHold) hold = ha_driver_hold_store(pm->store);

		boot = ha_store_pm_crashed_boot(pm->store, pm->since_us, &e);
		if (boot <= 0)
			g_warning("%s: post-mortem: no crashed boot to join the dump to%s%s",
				  pm->label, e ? ": " : "", e ? e->message : "");
		else if (!ha_postmortem_recover(pm->store, boot, pm->core,
							 HA_PM_SOURCE_LIBVIRT, j->dump_ms, &e))
			g_warning("%s: post-mortem of boot %" PRId64 ": %s", pm->label, boot,
				  e->message);
		else
			g_message("%s: post-mortem of boot %" PRId64 " ready %.3f s after"
				  " CRASHED (dump %.3f s, %" PRIu64 " MiB)", pm->label, boot,
				  (double)(g_get_monotonic_time() - pm->crash_us) / 1e6,
				  (double)j->dump_ms / 1e3, j->ram >> 20);
		if (!pm->o.keep_dump)
			unlink(pm->core);
		else
			g_message("%s: post-mortem: the dump stays in %s (--dump-keep)",
				  pm->label, pm->core);
	}
	/* <on_crash>preserve</on_crash>: the user keeps the crashed guest (pm-libvirt.h) */
	g_message("%s: post-mortem finished; the domain stays crashed (on_crash preserve:"
		  " virsh destroy ends it)", pm->label);
}

HaLvPm *ha_lv_pm_new(HaStore *store, const char *label)
{
	HaLvPm *pm;

	if (!pm_opts.enabled)
		return NULL;
	pm = g_new0(HaLvPm, 1);
	pm->store = store;
	pm->label = g_strdup(label);
	pm->o = pm_opts;
	pm->core = g_strdup_printf("%s/%s.core", pm_dir, label);
	return pm;
}

void ha_lv_pm_crashed(HaLvPm *pm, virDomainPtr dom, int64_t alive_since_us)
{
	g_autoptr(GTask) task = NULL;
	DumpJob *j;

	if (!pm || pm->busy)
		return;
	if (virDomainRef(dom) < 0) {
		g_autofree char *why = ha_lv_error();

		g_warning("%s: post-mortem: %s", pm->label, why);
		return;
	}
	j = g_new0(DumpJob, 1);
	j->dom = dom;
	j->core = g_strdup(pm->core);
	j->dir = g_strdup(pm->o.dump_dir);
	j->max_bytes = pm->o.max_bytes;
	pm->busy = pm->in_flight = pm->dump_task = true;
	pm->since_us = alive_since_us;
	pm->crash_us = g_get_monotonic_time();
	pm->crash_real_us = g_get_real_time();
	pm->settled = pm->awaiting = false;
	g_free(pm->prefix);
	/* virDomainDefGetShortName(): the id, a dash, at most 20 bytes of the name */
	pm->prefix = g_strdup_printf("%d-%.20s-", (int)virDomainGetID(dom),
				     virDomainGetName(dom));
	g_free(pm->auto_dir);
	pm->auto_dir = NULL;
	task = g_task_new(NULL, NULL, on_dumped, pm);
	g_task_set_source_tag(task, ha_lv_pm_crashed);
	g_task_set_task_data(task, j, (GDestroyNotify)dump_job_free);
	g_task_run_in_thread(task, dump_thread);
}

void ha_lv_pm_event(HaLvPm *pm, int event)
{
	if (!pm || !pm->busy || pm->settled || event == VIR_DOMAIN_EVENT_CRASHED)
		return;
	pm->settled = true;	/* libvirt's panic job is past its dump */
	if (pm->awaiting)
		start_find(pm);
}

void ha_lv_pm_free(HaLvPm *pm)
{
	if (!pm)
		return;
	if (pm->in_flight) {
		/* libvirt cannot abort a memory-only dump: let it end in its thread (the
		 * callback deletes a core made after this; a process that exits first
		 * may leave one, replaced by the next crash's) */
		if (pm->dump_task)
			unlink(pm->core);
		pm->closing = true;
		return;
	}
	pm_destroy(pm);	/* also when awaiting libvirt's dump: nothing runs */
}
