// SPDX-License-Identifier: MIT
/*
 * main.c - host-agent: the daemon (options, main loop, signals) and the commands
 * (report, export, attach, detach, ship, recover), each with its own options and --help, from
 * one table (commands[] below). Exit status: 0 success, 1 a runtime failure (no store,
 * a store, file or connection that could not be opened, a failed query), 2 a usage
 * error (an unknown command or option, a bad value) or a command this build lacks.
 */
#include <gio/gio.h>
#include <glib-unix.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach.h"
#ifdef HA_HAVE_CLICKHOUSE
#include "clickhouse.h"
#endif
#include "config.h"
#include "export-tracedat.h"
#ifdef HA_HAVE_LIBVIRT
#include "fleet.h"
#include "pm-libvirt.h"
#endif
#include "postmortem.h"
#include "qmp.h"
#include "store-postmortem.h"
#include "report.h"
#include "source.h"
#include "proto.h"
#include "store.h"

#ifndef HA_VERSION
#define HA_VERSION "unknown"
#endif

/* Where the stream and the crash news come from, besides --socket/--listen. */
typedef struct {
	char *qmp;	/* --qmp PATH: QEMU's QMP socket, for GUEST_PANICKED */
	char *domain;	/* --domain NAME: a libvirt domain */
	char *uri;	/* --connect URI: libvirt connection (default: libvirt's) */
	gboolean all;	/* --all-domains: every libvirt domain with the channel */
	char *dir;	/* --socket-dir DIR: every plain-QEMU VM socket in DIR */
	char *clickhouse;	/* --clickhouse URL: the fleet store */
	char *host;	/* --host NAME: this host in the fleet store */
	char *ended;	/* report --clickhouse: only boots that ended so */
	gboolean domain_given;	/* --domain-name set (a filter of fleet reports) */
	HaPmOpts pm;		/* --qmp: the post-mortem after a paused panic */
} HaWatch;

static gboolean on_signal(gpointer loop)
{
	g_message("signal received, stopping");
	g_main_loop_quit(loop);
	return G_SOURCE_CONTINUE;
}

/* Run the daemon on @db until a signal; the caller holds the domain's lock. */
static int serve(HaConfig *cfg, const HaWatch *w, const char *db)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) store = NULL;
	g_autoptr(HaSource) src = NULL;
	g_autoptr(HaQmp) qmp = NULL;
#ifdef HA_HAVE_LIBVIRT
	g_autoptr(HaLvSource) lvsrc = NULL;
#endif
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	g_autofree char *quota = NULL;
	HaLimits lim;

	store = ha_store_open(db, false, &e);
	if (!store) {
		g_printerr("host-agent: %s\n", e->message);
		return 1;
	}
	ha_config_limits(cfg, &lim);
#ifdef HA_HAVE_LIBVIRT
	if (w->domain) {
		lvsrc = ha_lv_source_new(w->uri, w->domain, store, &lim, cfg->domain);
		if (!ha_lv_source_start(lvsrc, &e)) {
			g_printerr("host-agent: %s\n", e->message);
			return 1;
		}
	} else
#endif
	{
		src = ha_source_new_socket(cfg->socket ? cfg->socket : cfg->listen,
					   !!cfg->listen, store, &lim, cfg->domain, &e);
		if (!src || !ha_source_start(src, &e)) {
			g_printerr("host-agent: %s\n", e->message);
			return 1;
		}
	}
	if (w->qmp) {
		qmp = ha_qmp_new(w->qmp, store, cfg->domain);
		ha_qmp_set_postmortem(qmp, &w->pm);
		ha_qmp_start(qmp);
	}
	quota = lim.quota_bytes ? g_strdup_printf("disk quota %" G_GUINT64_FORMAT " MiB",
						  lim.quota_bytes >> 20) :
				  g_strdup("no disk quota");
	g_message("domain %s: storing into %s (%s, zstd level %d)", cfg->domain, db, quota,
		  lim.zstd_level);
	g_unix_signal_add(SIGTERM, on_signal, loop);
	g_unix_signal_add(SIGINT, on_signal, loop);
	g_main_loop_run(loop);
	g_clear_pointer(&qmp, ha_qmp_free);
	g_clear_pointer(&src, ha_source_free);	/* records how the stream ended */
#ifdef HA_HAVE_LIBVIRT
	g_clear_pointer(&lvsrc, ha_lv_source_free);
#endif
	return 0;
}

/* --all-domains: one store per domain, each locked by the fleet (fleet.h). */
static int serve_fleet(HaConfig *cfg, const HaWatch *w)
{
#ifdef HA_HAVE_LIBVIRT
	g_autoptr(GError) e = NULL;
	g_autoptr(HaFleet) fleet = NULL;
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	HaLimits lim;

	ha_config_limits(cfg, &lim);
	fleet = ha_fleet_new(w->uri, cfg->state_dir, &lim);
	if (!ha_fleet_start(fleet, &e)) {
		g_printerr("host-agent: %s\n", e->message);
		return 1;
	}
	g_unix_signal_add(SIGTERM, on_signal, loop);
	g_unix_signal_add(SIGINT, on_signal, loop);
	g_main_loop_run(loop);
	g_clear_pointer(&fleet, ha_fleet_free);	/* records how the streams ended */
	return 0;
#else
	return 2;
#endif
}

/* --socket-dir: one store per VM socket in the directory (source.h). */
static int serve_dir(HaConfig *cfg, const HaWatch *w)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaDirSource) dir = NULL;
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	HaLimits lim;

	ha_config_limits(cfg, &lim);
	dir = ha_dir_source_new(w->dir, cfg->state_dir, &lim, &e);
	if (!dir) {
		g_printerr("host-agent: --socket-dir: %s\n", e->message);
		return 1;
	}
	ha_dir_source_set_postmortem(dir, &w->pm);
	ha_dir_source_start(dir);
	g_unix_signal_add(SIGTERM, on_signal, loop);
	g_unix_signal_add(SIGINT, on_signal, loop);
	g_main_loop_run(loop);
	g_clear_pointer(&dir, ha_dir_source_free);	/* records how the streams ended */
	return 0;
}

static int run_daemon(HaConfig *cfg, const HaWatch *w)
{
	g_autofree char *db = NULL;
	g_autofree char *lock = NULL;
	int lock_fd, rc;

	if (!!cfg->socket + !!cfg->listen + !!w->domain + !!w->all + !!w->dir != 1) {
		g_printerr("host-agent: give exactly one of --socket PATH, --listen PATH,"
			   " --socket-dir DIR, --domain NAME or --all-domains\n");
		return 2;
	}
	if (w->qmp && w->dir) {
		g_printerr("host-agent: with --socket-dir, each VM's QMP socket is NAME.qmp"
			   " beside its NAME.sock\n");
		return 2;
	}
	if (w->qmp && (w->domain || w->all)) {
		g_printerr("host-agent: --qmp is for plain QEMU; with --domain, libvirt's"
			   " lifecycle events report crashes\n");
		return 2;
	}
#ifndef HA_HAVE_LIBVIRT
	if (w->domain || w->all) {
		g_printerr("host-agent: built without libvirt (libvirt-dev, libvirt-glib-1.0-dev):"
			   " --domain and --all-domains are not available\n");
		return 2;
	}
#endif
	if (g_mkdir_with_parents(cfg->state_dir, 0750) < 0) {
		g_printerr("host-agent: cannot create %s: %s\n", cfg->state_dir,
			   g_strerror(errno));
		return 1;
	}
	if (w->clickhouse) {
#ifdef HA_HAVE_CLICKHOUSE
		g_autoptr(GError) e = NULL;
		g_autoptr(HaChRepl) repl = ha_ch_repl_start(w->clickhouse, cfg->state_dir,
							    w->host ? w->host : g_get_host_name(),
							    2000, &e);
		HaWatch inner = *w;

		if (!repl) {
			g_printerr("host-agent: %s\n", e->message);
			return 2;
		}
		inner.clickhouse = NULL;
		return run_daemon(cfg, &inner);	/* then a last round, and the thread ends */
#else
		g_printerr("host-agent: built without libcurl and json-glib: --clickhouse is"
			   " not available\n");
		return 2;
#endif
	}
#ifdef HA_HAVE_LIBVIRT
	if (w->domain || w->all)
		ha_lv_pm_configure(&w->pm);	/* every libvirt source's post-mortem */
#endif
	if (w->all)
		return serve_fleet(cfg, w);
	if (w->dir)
		return serve_dir(cfg, w);
	db = ha_config_db_path(cfg);
	/* One daemon per domain: a second one would fight over the resume points. */
	lock = g_strconcat(db, ".lock", NULL);
	lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
		g_printerr("host-agent: %s: %s\n", lock, lock_fd < 0 ? g_strerror(errno) :
			   "another host-agent is already storing this domain");
		if (lock_fd >= 0)
			close(lock_fd);
		return 1;
	}
	rc = serve(cfg, w, db);
	close(lock_fd);
	return rc;
}

/* `ship STORE URL`: a store's boots into ClickHouse (clickhouse.h). STORE is a .db
 * file or a domain name in the state dir. */
static int run_ship(HaConfig *cfg, const HaWatch *w, int argc, char **argv)
{
#ifdef HA_HAVE_CLICKHOUSE
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) store = NULL;
	g_autoptr(HaCh) ch = NULL;
	g_autofree char *db = NULL;
	g_autofree char *base = NULL;
	g_autofree char *mark = NULL;
	HaShipStats st = { 0 };
	gint64 t0 = g_get_monotonic_time();
	double secs;

	if (argc != 2) {
		g_printerr("host-agent ship: usage: ship STORE URL [--host NAME]\n");
		return 2;
	}
	if (g_file_test(argv[0], G_FILE_TEST_IS_REGULAR)) {
		db = g_strdup(argv[0]);
	} else if (ha_store_name_ok(argv[0])) {
		g_autofree char *f = g_strconcat(argv[0], ".db", NULL);

		db = g_build_filename(cfg->state_dir, f, NULL);
	}
	if (!db || !g_file_test(db, G_FILE_TEST_IS_REGULAR)) {
		g_printerr("host-agent ship: no store %s\n", argv[0]);
		return 1;
	}
	base = g_path_get_basename(db);
	if (g_str_has_suffix(base, ".db"))
		base[strlen(base) - 3] = '\0';
	mark = g_strconcat(db, ".ship", NULL);
	store = ha_store_open(db, true, &e);
	ch = store ? ha_ch_new(argv[1], &e) : NULL;
	if (!ch || !ha_ch_ship(ch, store, w->host ? w->host : g_get_host_name(), base, mark,
			       &st, &e)) {
		g_printerr("host-agent ship: %s\n", e->message);
		return 1;
	}
	secs = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_printerr("host-agent ship: %s: %u boots shipped (%u unchanged), %" G_GUINT64_FORMAT
		   " rows (%" G_GUINT64_FORMAT " events), %" G_GUINT64_FORMAT " bytes, %.2f s\n",
		   base, st.boots, st.unchanged, st.rows, st.events, st.bytes, secs);
	return 0;
#else
	g_printerr("host-agent: built without libcurl and json-glib: ship is not available\n");
	return 2;
#endif
}

/* `report --clickhouse URL boots|top|events|folded`: across the fleet. */
static int run_ch_report(HaConfig *cfg, const HaWatch *w, int argc, char **argv,
			 int limit, double since, double until, double last, bool json,
			 const char *event)
{
#ifdef HA_HAVE_CLICKHOUSE
	g_autoptr(GError) e = NULL;
	g_autoptr(HaCh) ch = ha_ch_new(w->clickhouse, &e);
	g_autoptr(GString) out = g_string_new(NULL);
	HaChReportOpts o = {
		.cmd = argc > 0 ? argv[0] : NULL,
		.host = w->host,
		.domain = w->domain_given ? cfg->domain : NULL,
		.ended = w->ended,
		.limit = limit > 0 ? (guint)limit : 0,
		.since_us = since >= 0 ? (int64_t)llround(since * 1e6) : -1,
		.until_us = until >= 0 ? (int64_t)llround(until * 1e6) : -1,
		.last_ns = last >= 0 ? (int64_t)llround(last * 1e9) : -1,
		.event = event,
		.json = json,
	};

	if (!ch || !ha_ch_report(ch, &o, out, &e)) {
		g_printerr("host-agent report: %s\n", e->message);
		return 1;
	}
	fwrite(out->str, 1, out->len, stdout);
	return 0;
#else
	g_printerr("host-agent: built without libcurl and json-glib: --clickhouse is not"
		   " available\n");
	return 2;
#endif
}

/* `attach` / `detach`: the stackmap channel of a libvirt domain (attach.h). */
static int run_attach(const HaWatch *w, bool attach)
{
#ifdef HA_HAVE_LIBVIRT
	g_autoptr(GError) e = NULL;
	g_autofree char *note = NULL;

	if (!w->domain) {
		g_printerr("host-agent %s: which domain? --domain NAME\n",
			   attach ? "attach" : "detach");
		return 2;
	}
	if (!ha_attach(w->uri, w->domain, attach, &note, &e)) {
		g_printerr("host-agent %s: %s\n", attach ? "attach" : "detach", e->message);
		return 1;
	}
	printf("%s\n", note ? note : attach ? "channel org.stackmap.0 attached" :
	       "channel org.stackmap.0 detached");
	return 0;
#else
	g_printerr("host-agent: built without libvirt: attach/detach are not available\n");
	return 2;
#endif
}

/* Every option's value: the option tables below point into it. */
static struct {
	HaConfig cfg;
	HaWatch watch;
	gboolean version, json, stack_ids;
	int dat_version;
	char *boot, *vmlinux, *cpus, *output, *format, *event;
	char *host_time;	/* --host-time CLOCK (report events, export) */
	char *host_trace_id;	/* --host-trace-id ID (export): TIME_SHIFT's peer */
	gint limit, max_malformed, batch_mb, time_probe_ms;
	gint64 zstd_level;
	gdouble since, until, last;
	gint64 quota_mb;
	gboolean dump_keep, keep_paused, no_postmortem;	/* postmortem.h */
	gint64 dump_max_mb;
} opt;

static int run_report(HaConfig *cfg, int argc, char **argv, const char *boot, bool json,
		      int limit, const char *vmlinux, double since, double until,
		      const char *format, const char *event)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) store = NULL;
	g_autoptr(GString) out = g_string_new(NULL);
	g_autofree char *db = ha_config_db_path(cfg);
	HaReportOpts o = {
		.cmd = argc > 0 ? argv[0] : NULL,
		.arg = argc > 1 ? argv[1] : NULL,
		.boot = boot,
		.json = json,
		.limit = limit > 0 ? (guint)limit : 0,
		.vmlinux = vmlinux,
		.since_ns = since >= 0 ? (int64_t)llround(since * 1e9) : -1,
		.until_ns = until >= 0 ? (int64_t)llround(until * 1e9) : -1,
		.format = format,
		.event = event,
		.host_time = opt.host_time,
	};

	if (format && strcmp(format, "text") && strcmp(format, "perf-script")) {
		g_printerr("host-agent report: --format is text or perf-script\n");
		return 2;
	}
	if (format && !strcmp(format, "text"))
		o.format = NULL;
	/* perf-script of a whole boot: written as it is decoded, in bounded memory */
	if (o.format && !strcmp(o.format, "perf-script") && !g_strcmp0(o.cmd, "events"))
		o.stream = stdout;
	if (!o.cmd) {
		g_printerr("host-agent report: which report? boots, top, events, stack ID, folded,"
			   " flamegraph, postmortem\n");
		return 2;
	}
	if (!g_file_test(db, G_FILE_TEST_EXISTS)) {
		g_printerr("host-agent report: no store for domain %s (%s)\n", cfg->domain, db);
		return 1;
	}
	store = ha_store_open(db, true, &e);
	if (!store || !ha_report(store, &o, out, &e)) {
		g_printerr("host-agent report: %s\n", e->message);
		return 1;
	}
	fwrite(out->str, 1, out->len, stdout);
	return 0;
}

/* `export trace.dat -o FILE`: a stored boot for trace-cmd and KernelShark. */
static int run_export(HaConfig *cfg, int argc, char **argv, const char *boot,
		      double since, double until, const char *cpus, const char *output,
		      bool stack_ids, int dat_version, const char *vmlinux)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) store = NULL;
	g_autoptr(HaDwarf) dw = NULL;
	g_autofree char *db = ha_config_db_path(cfg);
	HaExportStats st;
	HaExportOpts o = {
		.boot = boot,
		.since_ns = since >= 0 ? (int64_t)llround(since * 1e9) : -1,
		.until_ns = until >= 0 ? (int64_t)llround(until * 1e9) : -1,
		.cpus = cpus,
		.output = output,
		.progress = true,
		.stack_ids = stack_ids,
		.version = dat_version,
		.host_time = opt.host_time,
	};
	gint64 t0 = g_get_monotonic_time();
	guint64 peer = 0;
	const char *hex = opt.host_trace_id;
	double secs;

	if (argc < 1 || strcmp(argv[0], "trace.dat") || !output) {
		g_printerr("host-agent export: usage: export trace.dat -o FILE [--boot B]"
			   " [--since S] [--until S] [--cpus LIST] [--dat-version 7|6]"
			   " [--vmlinux FILE] [--host-time CLOCK [--host-trace-id ID]]\n");
		return 2;
	}
	if (hex && (g_str_has_prefix(hex, "0x") || g_str_has_prefix(hex, "0X")))
		hex += 2;
	if (opt.host_trace_id && (!opt.host_time || !*hex || strlen(hex) > 16 ||
				  !g_ascii_string_to_unsigned(hex, 16, 0, G_MAXUINT64, &peer,
							      NULL))) {
		g_printerr("host-agent export: --host-trace-id %s: the host trace.dat's TRACEID"
			   " (hex, as trace-cmd dump --options prints it), with --host-time\n",
			   opt.host_trace_id);
		return 2;
	}
	o.host_trace_id = peer;
	if (dat_version != 6 && dat_version != 7) {
		g_printerr("host-agent export: --dat-version %d: 7 (zstd) or 6\n", dat_version);
		return 2;
	}
	if (!g_file_test(db, G_FILE_TEST_EXISTS)) {
		g_printerr("host-agent export: no store for domain %s (%s)\n", cfg->domain, db);
		return 1;
	}
	if (vmlinux && !(dw = ha_dwarf_open(vmlinux, &e))) {
		g_printerr("host-agent export: %s\n", e->message);
		return 1;
	}
	o.dwarf = dw;
	store = ha_store_open(db, true, &e);
	if (!store || !ha_store_read_begin(store, &e) ||
	    !ha_export_tracedat(store, &o, &st, &e)) {
		g_printerr("host-agent export: %s\n", e->message);
		return 1;
	}
	ha_store_read_end(store);
	secs = (double)(g_get_monotonic_time() - t0) / 1e6;
	g_printerr("host-agent export: %s: %" G_GUINT64_FORMAT " events on %u CPUs (%"
		   G_GUINT64_FORMAT " stacks from the map, %" G_GUINT64_FORMAT " ids unresolved"
		   " kept as stack_id, %" G_GUINT64_FORMAT " pages flagged with lost events),"
		   " %u tasks named, %" G_GUINT64_FORMAT " bytes, %.2f s\n", output, st.events,
		   st.nr_cpus, st.rehydrated, st.unresolved, st.dropped_marks, st.cmdlines,
		   st.file_bytes, secs);
	if (st.time_shift_points)
		g_printerr("host-agent export: TIME_SHIFT to host %s: %u samples, uncertainty"
			   " %.1f..%.1f us\n", opt.host_time, st.time_shift_points,
			   (double)st.time_shift_unc_min / 1000.0,
			   (double)st.time_shift_unc_max / 1000.0);
	if (dat_version >= 7)
		g_printerr("host-agent export: v7, pages zstd-compressed: %" G_GUINT64_FORMAT
			   " bytes of pages before compression\n", st.raw_page_bytes);
	if (st.truncated || st.out_of_order)
		g_printerr("host-agent export: %" G_GUINT64_FORMAT " stacks cut to fit a page, %"
			   G_GUINT64_FORMAT " events older than the one before them\n",
			   st.truncated, st.out_of_order);
	return 0;
}

/* ---- the options of the daemon and of each command ---- */

#define E_STR(name, field, help, arg) \
	{ name, 0, 0, G_OPTION_ARG_STRING, &opt.field, help, arg }
#define E_FILE(name, field, help, arg) \
	{ name, 0, 0, G_OPTION_ARG_FILENAME, &opt.field, help, arg }

/* Where the stores are: the daemon's and every command's. */
static const GOptionEntry store_entries[] = {
	E_FILE("state-dir", cfg.state_dir, "Where the per-domain databases live", "DIR"),
	E_STR("domain-name", cfg.domain, "Name of the domain's store (default: default)",
	      "NAME"),
	E_FILE("config", cfg.config, "GKeyFile with a [host-agent] group of these long"
	       " options", "FILE"),
	G_OPTION_ENTRY_NULL,
};

static const GOptionEntry daemon_entries[] = {
	E_FILE("socket", cfg.socket, "Connect to a QEMU -chardev socket,server=on at PATH",
	       "PATH"),
	E_FILE("listen", cfg.listen, "Listen at PATH for a QEMU -chardev socket,server=off",
	       "PATH"),
	E_FILE("socket-dir", watch.dir, "Every plain-QEMU VM in DIR: NAME.sock (server=on)"
	       " and NAME.qmp, each into its own store NAME.db, VMs coming and going", "DIR"),
	E_STR("domain", watch.domain, "A libvirt domain: its org.stackmap.0 channel and"
	      " lifecycle (the store's name defaults to it)", "NAME"),
	{ "all-domains", 0, 0, G_OPTION_ARG_NONE, &opt.watch.all,
	  "Every libvirt domain with the org.stackmap.0 channel, each into its own store,"
	  " domains coming and going", NULL },
	E_STR("connect", watch.uri, "libvirt URI for --domain (default: libvirt's)", "URI"),
	E_FILE("qmp", watch.qmp, "QEMU's QMP socket (-qmp unix:PATH,server=on): mark boots"
	       " crashed on GUEST_PANICKED", "PATH"),
	{ "dump-keep", 0, 0, G_OPTION_ARG_NONE, &opt.dump_keep,
	  "--qmp, --domain: keep the crashed guest's memory dump (STATE-DIR/NAME.core) after reading"
	  " its kernel log (default: deleted)", NULL },
	{ "dump-max-mb", 0, 0, G_OPTION_ARG_INT64, &opt.dump_max_mb,
	  "--qmp, --domain: dump a crashed guest of at most this much RAM (default 4096)", "MB" },
	{ "keep-paused", 0, 0, G_OPTION_ARG_NONE, &opt.keep_paused,
	  "--qmp: leave a crashed, paused guest paused after the dump (default: quit QEMU;"
	  " a libvirt domain stays as its on_crash says)",
	  NULL },
	{ "no-postmortem", 0, 0, G_OPTION_ARG_NONE, &opt.no_postmortem,
	  "--qmp, --domain: never dump a crashed guest's memory (a paused one stays paused)", NULL },
	E_STR("clickhouse", watch.clickhouse, "The fleet store: replicate every store into"
	      " ClickHouse at URL", "URL"),
	E_STR("host", watch.host, "This host's name in the fleet store (default: the host"
	      " name)", "NAME"),
	{ "quota-mb", 0, 0, G_OPTION_ARG_INT64, &opt.quota_mb,
	  "Disk quota of the domain's store in MiB (default: 1024; 0: none)", "MB" },
	{ "max-malformed", 0, 0, G_OPTION_ARG_INT, &opt.max_malformed,
	  "Malformed frames per connection before hanging up (default 1000)", "N" },
	{ "batch-mb", 0, 0, G_OPTION_ARG_INT, &opt.batch_mb,
	  "Commit a batch at this many MiB of frames (default 4)", "MB" },
	{ "time-probe-ms", 0, 0, G_OPTION_ARG_INT, &opt.time_probe_ms,
	  "Probe the guest's trace clock against the host's this often (default 1000; 0:"
	  " never)", "MS" },
	{ "zstd-level", 0, 0, G_OPTION_ARG_INT64, &opt.zstd_level,
	  "Compress new chunks at this zstd level (default 1; below 0 faster and larger)",
	  "N" },
	{ "version", 0, 0, G_OPTION_ARG_NONE, &opt.version, "Print the version", NULL },
	G_OPTION_ENTRY_NULL,
};

static const GOptionEntry report_entries[] = {
	E_STR("domain", watch.domain, "The libvirt domain whose store to read (the store"
	      " named after it, as the daemon's --domain names it)", "NAME"),
	E_STR("boot", boot, "Boot number, boot_id prefix or 'all' (default: latest)", "BOOT"),
	{ "json", 0, 0, G_OPTION_ARG_NONE, &opt.json, "JSON output", NULL },
	{ "limit", 'n', 0, G_OPTION_ARG_INT, &opt.limit, "top, events: how many", "N" },
	E_FILE("vmlinux", vmlinux, "The boot's vmlinux with DWARF: file:line and inlined"
	       " frames, the enum values the format files leave as names", "PATH"),
	{ "since", 0, 0, G_OPTION_ARG_DOUBLE, &opt.since,
	  "events, flamegraph: from this trace-clock time (seconds); with --clickhouse:"
	  " boots alive from this host time (Unix seconds), and events from it", "SECONDS" },
	{ "until", 0, 0, G_OPTION_ARG_DOUBLE, &opt.until,
	  "events, flamegraph: up to this trace-clock time (seconds); with --clickhouse:"
	  " boots alive up to this host time (Unix seconds), and events up to it",
	  "SECONDS" },
	E_STR("format", format, "events: text (default) or perf-script", "FORMAT"),
	E_STR("event", event, "events, flamegraph: only this event (kmem/kmalloc or"
	      " kmalloc)", "NAME"),
	E_STR("host-time", host_time, "events: also each event's host time on CLOCK"
	      " (realtime, mono, boot, tai)", "CLOCK"),
	E_STR("clickhouse", watch.clickhouse, "Report on the fleet store at URL instead of"
	      " a domain's store", "URL"),
	E_STR("host", watch.host, "--clickhouse: only this host", "NAME"),
	E_STR("ended", watch.ended, "--clickhouse: only boots that ended so (clean, crashed,"
	      " disconnected, running)", "HOW"),
	{ "last", 0, 0, G_OPTION_ARG_DOUBLE, &opt.last,
	  "--clickhouse events, top, folded: the events of each boot's last SECONDS (of its"
	  " trace: before a crash, say)", "SECONDS" },
	G_OPTION_ENTRY_NULL,
};

static const GOptionEntry export_entries[] = {
	E_STR("domain", watch.domain, "The libvirt domain whose store to read (the store"
	      " named after it)", "NAME"),
	{ "output", 'o', 0, G_OPTION_ARG_FILENAME, &opt.output, "The file to write", "FILE" },
	E_STR("boot", boot, "Boot number or boot_id prefix (default: latest)", "BOOT"),
	{ "since", 0, 0, G_OPTION_ARG_DOUBLE, &opt.since,
	  "From this trace-clock time (seconds)", "SECONDS" },
	{ "until", 0, 0, G_OPTION_ARG_DOUBLE, &opt.until,
	  "Up to this trace-clock time (seconds)", "SECONDS" },
	E_STR("cpus", cpus, "Only these CPUs (0,2-3)", "LIST"),
	{ "stack-ids", 0, 0, G_OPTION_ARG_NONE, &opt.stack_ids,
	  "Keep stack_id events (as trace-cmd record in the guest has them)", NULL },
	{ "dat-version", 0, 0, G_OPTION_ARG_INT, &opt.dat_version,
	  "trace.dat version, 7 (default: zstd-compressed) or 6", "N" },
	E_FILE("vmlinux", vmlinux, "The boot's vmlinux with DWARF: the enum values the"
	       " format files leave as names", "PATH"),
	E_STR("host-time", host_time, "trace-cmd's TIME_SHIFT to host CLOCK (realtime, mono,"
	      " boot, tai), for trace-cmd report -i host.dat -i guest.dat", "CLOCK"),
	E_STR("host-trace-id", host_trace_id, "With --host-time: the host recording's trace"
	      " id (its TRACEID, from trace-cmd dump --options -i host.dat), TIME_SHIFT's"
	      " peer", "ID"),
	G_OPTION_ENTRY_NULL,
};

static const GOptionEntry libvirt_entries[] = {
	E_STR("domain", watch.domain, "The libvirt domain", "NAME"),
	E_STR("connect", watch.uri, "libvirt URI (default: libvirt's)", "URI"),
	G_OPTION_ENTRY_NULL,
};

static const GOptionEntry recover_entries[] = {
	E_STR("boot", boot, "The boot the dump is of (default: the newest crashed one)",
	      "BOOT"),
	G_OPTION_ENTRY_NULL,
};

static const GOptionEntry ship_entries[] = {
	E_STR("host", watch.host, "This host's name in the fleet store (default: the host"
	      " name)", "NAME"),
	G_OPTION_ENTRY_NULL,
};

/* ---- the commands: @argc/@argv are the arguments after the command's name ---- */

static int cmd_report(int argc, char **argv)
{
	if (opt.watch.clickhouse)
		return run_ch_report(&opt.cfg, &opt.watch, argc, argv, opt.limit, opt.since,
				     opt.until, opt.last, opt.json, opt.event);
	return run_report(&opt.cfg, argc, argv, opt.boot, opt.json, opt.limit, opt.vmlinux,
			  opt.since, opt.until, opt.format, opt.event);
}

static int cmd_export(int argc, char **argv)
{
	return run_export(&opt.cfg, argc, argv, opt.boot, opt.since, opt.until, opt.cpus,
			  opt.output, opt.stack_ids, opt.dat_version, opt.vmlinux);
}

static int cmd_attach(int argc, char **argv)
{
	(void)argv;
	if (argc) {
		g_printerr("host-agent attach: no arguments, --domain NAME\n");
		return 2;
	}
	return run_attach(&opt.watch, true);
}

static int cmd_detach(int argc, char **argv)
{
	(void)argv;
	if (argc) {
		g_printerr("host-agent detach: no arguments, --domain NAME\n");
		return 2;
	}
	return run_attach(&opt.watch, false);
}

static int cmd_ship(int argc, char **argv)
{
	return run_ship(&opt.cfg, &opt.watch, argc, argv);
}

/* `recover CORE`: a crashed guest's ELF core (dump-guest-memory, virsh dump
 * --memory-only) into a crashed boot of the store, as the daemon does after a
 * paused panic (postmortem.h). */
static int cmd_recover(int argc, char **argv)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) store = NULL;
	g_autofree char *db = ha_config_db_path(&opt.cfg);
	int64_t boot;

	if (argc != 1) {
		g_printerr("host-agent recover: usage: recover CORE [--boot N]\n");
		return 2;
	}
	if (!g_file_test(db, G_FILE_TEST_EXISTS)) {
		g_printerr("host-agent recover: no store for domain %s (%s)\n", opt.cfg.domain,
			   db);
		return 1;
	}
	store = ha_store_open(db, false, &e);
	if (!store) {
		g_printerr("host-agent recover: %s\n", e->message);
		return 1;
	}
	if (opt.boot) {
		g_autoptr(GArray) ids = ha_report_select_boots(store, opt.boot, &e);

		if (!ids || ids->len != 1) {
			g_printerr("host-agent recover: --boot %s: %s\n", opt.boot,
				   e ? e->message : "not one boot");
			return 2;
		}
		boot = g_array_index(ids, int64_t, 0);
	} else {
		boot = ha_store_pm_crashed_boot(store, 0, &e);
		if (boot <= 0) {
			g_printerr("host-agent recover: %s\n", e ? e->message :
				   "no crashed boot in the store (--boot N names one)");
			return 1;
		}
	}
	if (!ha_postmortem_recover(store, boot, argv[0], HA_PM_SOURCE_FILE, -1, &e)) {
		g_printerr("host-agent recover: boot %" G_GINT64_FORMAT ": %s\n", boot,
			   e->message);
		return 1;
	}
	printf("boot %" G_GINT64_FORMAT ": kernel log recovered from %s\n", boot, argv[0]);
	return 0;
}

typedef struct {
	const char *name;
	const char *params;	/* --help's usage line, after the name */
	const char *brief;	/* one line, in the daemon's --help */
	const char *summary;	/* the command's --help */
	const GOptionEntry *entries;
	int (*run)(int argc, char **argv);
} HaCommand;

static const HaCommand commands[] = {
	{ "report", "boots|top|events|stack ID|folded|flamegraph|postmortem",
	  "Print a report of a domain's store, or of the fleet's",
	  "Print a report of the stored data of --domain-name (never of the live\n"
	  "connection; the daemon may be writing it), or with --clickhouse of the fleet.",
	  report_entries, cmd_report },
	{ "export", "trace.dat -o FILE", "Write a stored boot as a trace.dat",
	  "Write a stored boot as a trace-cmd trace.dat, for trace-cmd and KernelShark.",
	  export_entries, cmd_export },
	{ "attach", "--domain NAME", "Hot-plug the stackmap channel into a libvirt domain",
	  "Hot-plug the org.stackmap.0 channel into a libvirt domain, live and config.",
	  libvirt_entries, cmd_attach },
	{ "detach", "--domain NAME", "Take the stackmap channel out of a libvirt domain",
	  "Take the org.stackmap.0 channel out of a libvirt domain, live and config.",
	  libvirt_entries, cmd_detach },
	{ "ship", "STORE URL", "Copy a store's boots into the fleet store (ClickHouse)",
	  "Copy a store's boots (a .db file, or a domain name in --state-dir) into the\n"
	  "fleet store, ClickHouse at URL.",
	  ship_entries, cmd_ship },
	{ "recover", "CORE", "Read a crashed guest's kernel log from its memory dump",
	  "Read the kernel log (panic, oops, backtrace) of a crashed guest from its ELF\n"
	  "memory dump (QMP dump-guest-memory, virsh dump --memory-only) into the\n"
	  "store's crashed boot; the daemon does this itself after a paused panic.",
	  recover_entries, cmd_recover },
};

static const char exit_status_help[] =
	"Exit status: 0 success; 1 a runtime failure (no store for the domain, a store,\n"
	"file or connection that could not be opened, a failed query); 2 a usage error\n"
	"(an unknown command or option, a bad value) or a command this build lacks.";

/* --help's text after the options: the commands (daemon) or none, and exit status. */
static char *help_description(const HaCommand *cmd)
{
	GString *d = g_string_new(NULL);

	if (!cmd) {
		g_string_append(d,
			"Without a command, runs the daemon: receives a guest's trace stream from\n"
			"its virtio-serial port (a QEMU chardev socket, or a libvirt domain's\n"
			"channel with --domain), stores it durably and ACKs it.\n\n"
			"Commands (host-agent COMMAND --help for each one's options):\n");
		for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
			g_string_append_printf(d, "  %-8s %s\n", commands[i].name,
					       commands[i].brief);
		g_string_append_c(d, '\n');
	}
	g_string_append(d, exit_status_help);
	return g_string_free(d, FALSE);
}

int main(int argc, char **argv)
{
	const HaCommand *cmd = NULL;
	g_autoptr(GOptionContext) ctx = NULL;
	g_autoptr(GError) e = NULL;
	g_autofree char *prgname = NULL, *desc = NULL;
	bool loaded;
	int rc;

	setlocale(LC_ALL, "");
	ha_config_init(&opt.cfg);
	opt.dat_version = 7;
	opt.max_malformed = opt.batch_mb = opt.time_probe_ms = -1;
	opt.quota_mb = -1;
	opt.zstd_level = HA_CONFIG_UNSET;
	opt.dump_max_mb = HA_PM_DEFAULT_MAX_MB;
	opt.since = opt.until = opt.last = -1;
	/* The command, when there is one, comes first: host-agent COMMAND [OPTIONS]. */
	for (guint i = 0; argc > 1 && i < G_N_ELEMENTS(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			cmd = &commands[i];
	/* --help: "Usage: host-agent report [OPTION...] boots|top|..." */
	prgname = cmd ? g_strconcat("host-agent ", cmd->name, NULL) : g_strdup("host-agent");
	g_set_prgname(prgname);
	ctx = g_option_context_new(cmd ? cmd->params :
				   "[COMMAND] - virtio-stackmap host agent");
	g_option_context_add_main_entries(ctx, cmd ? cmd->entries : daemon_entries, NULL);
	g_option_context_add_main_entries(ctx, store_entries, NULL);
	if (cmd)
		g_option_context_set_summary(ctx, cmd->summary);
	desc = help_description(cmd);
	g_option_context_set_description(ctx, desc);
	if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
		g_printerr("host-agent%s%s: %s\n", cmd ? " " : "", cmd ? cmd->name : "",
			   e->message);
		return 2;
	}
	if (opt.version) {
		printf("host-agent %s (protocol %d.%d, store schema %d)\n", HA_VERSION,
		       SMP_VERSION_MAJOR, SMP_VERSION_MINOR, HA_STORE_SCHEMA);
		return 0;
	}
	if (!cmd && argc > 1) {
		g_printerr("host-agent: unknown command '%s' (commands: report, export, attach,"
			   " detach, ship, recover; the command comes first; try --help)\n", argv[1]);
		return 2;
	}
	opt.cfg.quota_mb = opt.quota_mb;
	opt.cfg.max_malformed = opt.max_malformed;
	opt.cfg.batch_mb = opt.batch_mb;
	if (opt.time_probe_ms >= 0)
		opt.cfg.time_probe_ms = opt.time_probe_ms;
	opt.cfg.zstd_level = opt.zstd_level;
	signal(SIGPIPE, SIG_IGN);
	loaded = ha_config_load_file(&opt.cfg, &e);
	opt.watch.domain_given = opt.cfg.domain != NULL;
	if (loaded && !opt.cfg.domain && opt.watch.domain)
		opt.cfg.domain = g_strdup(opt.watch.domain);	/* the store is named after it */
	if (!loaded || !ha_config_finish(&opt.cfg, &e)) {
		g_printerr("host-agent: %s\n", e->message);
		ha_config_clear(&opt.cfg);
		return 2;
	}
	if (opt.dump_max_mb <= 0 || opt.dump_max_mb > (G_GINT64_CONSTANT(1) << 24)) {
		g_printerr("host-agent: --dump-max-mb: 1 to %d\n", 1 << 24);
		ha_config_clear(&opt.cfg);
		return 2;
	}
	opt.watch.pm = (HaPmOpts){
		.enabled = !opt.no_postmortem,
		.keep_dump = opt.dump_keep,
		.keep_paused = opt.keep_paused,
		.max_bytes = (uint64_t)opt.dump_max_mb << 20,
		.dump_dir = opt.cfg.state_dir,
	};
	rc = cmd ? cmd->run(argc - 2, argv + 2) : run_daemon(&opt.cfg, &opt.watch);
	ha_config_clear(&opt.cfg);
	g_free(opt.watch.qmp);
	g_free(opt.watch.domain);
	g_free(opt.watch.uri);
	g_free(opt.watch.dir);
	g_free(opt.watch.clickhouse);
	g_free(opt.watch.host);
	g_free(opt.watch.ended);
	g_free(opt.boot);
	g_free(opt.vmlinux);
	g_free(opt.cpus);
	g_free(opt.output);
	g_free(opt.format);
	g_free(opt.event);
	g_free(opt.host_time);
	g_free(opt.host_trace_id);
	return rc;
}
