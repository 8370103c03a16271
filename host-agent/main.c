// SPDX-License-Identifier: MIT
/*
 * main.c - host-agent: the daemon (options, main loop, signals) and the `report`
 * command, which reads the store only.
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

#include "config.h"
#include "report.h"
#include "source.h"
#include "store.h"

#ifndef HA_VERSION
#define HA_VERSION "unknown"
#endif

static gboolean on_signal(gpointer loop)
{
	g_message("signal received, stopping");
	g_main_loop_quit(loop);
	return G_SOURCE_CONTINUE;
}

/* Run the daemon on @db until a signal; the caller holds the domain's lock. */
static int serve(HaConfig *cfg, const char *db)
{
	g_autoptr(GError) e = NULL;
	g_autoptr(HaStore) store = NULL;
	g_autoptr(HaSource) src = NULL;
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	HaLimits lim;

	store = ha_store_open(db, false, &e);
	if (!store) {
		g_printerr("host-agent: %s\n", e->message);
		return 1;
	}
	ha_config_limits(cfg, &lim);
	src = ha_source_new_socket(cfg->socket ? cfg->socket : cfg->listen, !!cfg->listen,
				   store, &lim, cfg->domain, &e);
	if (!src || !ha_source_start(src, &e)) {
		g_printerr("host-agent: %s\n", e->message);
		return 1;
	}
	g_message("domain %s: storing into %s%s", cfg->domain, db,
		  lim.quota_bytes ? " (quota set)" : "");
	g_unix_signal_add(SIGTERM, on_signal, loop);
	g_unix_signal_add(SIGINT, on_signal, loop);
	g_main_loop_run(loop);
	g_clear_pointer(&src, ha_source_free);	/* records how the stream ended */
	return 0;
}

static int run_daemon(HaConfig *cfg)
{
	g_autofree char *db = NULL;
	g_autofree char *lock = NULL;
	int lock_fd, rc;

	if (!!cfg->socket == !!cfg->listen) {
		g_printerr("host-agent: give exactly one of --socket PATH or --listen PATH\n");
		return 2;
	}
	if (g_mkdir_with_parents(cfg->state_dir, 0750) < 0) {
		g_printerr("host-agent: cannot create %s: %s\n", cfg->state_dir,
			   g_strerror(errno));
		return 1;
	}
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
	rc = serve(cfg, db);
	close(lock_fd);
	return rc;
}

static int run_report(HaConfig *cfg, int argc, char **argv, const char *boot, bool json,
		      int limit, const char *vmlinux, double since, double until)
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
	};

	if (!o.cmd) {
		g_printerr("host-agent report: which report? boots, top, events, stack ID, folded\n");
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

int main(int argc, char **argv)
{
	HaConfig cfg;
	gboolean version = FALSE, json = FALSE;
	char *boot = NULL, *vmlinux = NULL;
	gint limit = 0, max_malformed = -1, batch_mb = -1;
	gdouble since = -1, until = -1;
	gint64 quota_mb = -1;
	int rc;
	GOptionEntry entries[] = {
		{ "socket", 0, 0, G_OPTION_ARG_FILENAME, &cfg.socket,
		  "Connect to a QEMU -chardev socket,server=on at PATH", "PATH" },
		{ "listen", 0, 0, G_OPTION_ARG_FILENAME, &cfg.listen,
		  "Listen at PATH for a QEMU -chardev socket,server=off", "PATH" },
		{ "state-dir", 0, 0, G_OPTION_ARG_FILENAME, &cfg.state_dir,
		  "Where the per-domain databases live", "DIR" },
		{ "domain-name", 0, 0, G_OPTION_ARG_STRING, &cfg.domain,
		  "Name of the domain's store (default: default)", "NAME" },
		{ "config", 0, 0, G_OPTION_ARG_FILENAME, &cfg.config,
		  "GKeyFile with a [host-agent] group of these long options", "FILE" },
		{ "quota-mb", 0, 0, G_OPTION_ARG_INT64, &quota_mb,
		  "Disk quota of the domain's store in MiB (default: none)", "MB" },
		{ "max-malformed", 0, 0, G_OPTION_ARG_INT, &max_malformed,
		  "Malformed frames per connection before hanging up (default 1000)", "N" },
		{ "batch-mb", 0, 0, G_OPTION_ARG_INT, &batch_mb,
		  "Commit a batch at this many MiB of frames (default 4)", "MB" },
		{ "boot", 0, 0, G_OPTION_ARG_STRING, &boot,
		  "report: boot number, boot_id prefix or 'all' (default: latest)", "BOOT" },
		{ "json", 0, 0, G_OPTION_ARG_NONE, &json, "report: JSON output", NULL },
		{ "vmlinux", 0, 0, G_OPTION_ARG_FILENAME, &vmlinux,
		  "report: the boot's vmlinux with DWARF: adds file:line and inlined frames",
		  "PATH" },
		{ "limit", 'n', 0, G_OPTION_ARG_INT, &limit,
		  "report top/events: how many", "N" },
		{ "since", 0, 0, G_OPTION_ARG_DOUBLE, &since,
		  "report events: from this trace-clock time (seconds)", "SECONDS" },
		{ "until", 0, 0, G_OPTION_ARG_DOUBLE, &until,
		  "report events: up to this trace-clock time (seconds)", "SECONDS" },
		{ "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version", NULL },
		G_OPTION_ENTRY_NULL,
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new(
		"[report boots|top|events|stack ID|folded] - virtio-stackmap host agent");
	g_autoptr(GError) e = NULL;

	setlocale(LC_ALL, "");
	ha_config_init(&cfg);
	g_option_context_add_main_entries(ctx, entries, NULL);
	g_option_context_set_description(ctx,
		"Without a command, runs the daemon: receives a guest's trace stream from its\n"
		"virtio-serial port (a QEMU chardev socket), stores it durably and ACKs it.\n"
		"`report` reads the stored data of --domain-name (never the live connection).");
	if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
		g_printerr("host-agent: %s\n", e->message);
		return 2;
	}
	if (version) {
		printf("host-agent %s (protocol %d.%d, store schema %d)\n", HA_VERSION,
		       1, 0, HA_STORE_SCHEMA);
		return 0;
	}
	cfg.quota_mb = quota_mb;
	cfg.max_malformed = max_malformed;
	cfg.batch_mb = batch_mb;
	signal(SIGPIPE, SIG_IGN);
	if (!ha_config_load_file(&cfg, &e) || !ha_config_finish(&cfg, &e)) {
		g_printerr("host-agent: %s\n", e->message);
		ha_config_clear(&cfg);
		return 2;
	}
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		rc = run_report(&cfg, argc - 2, argv + 2, boot, json, limit, vmlinux, since,
				until);
	else if (argc > 1) {
		g_printerr("host-agent: unknown command '%s' (try --help)\n", argv[1]);
		rc = 2;
	} else
		rc = run_daemon(&cfg);
	ha_config_clear(&cfg);
	g_free(boot);
	g_free(vmlinux);
	return rc;
}
