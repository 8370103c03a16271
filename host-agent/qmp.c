// SPDX-License-Identifier: MIT
/* qmp.c - QMP crash watcher (see qmp.h). */
#include "qmp.h"

#include <errno.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "backoff.h"
#include "conn-driver.h"
#include "crash.h"
#include "postmortem.h"
#include "store-postmortem.h"

#define LINE_MAX_BYTES	(64 * 1024)

struct _HaQmp {
	char *path;
	HaStore *store;
	char *domain;

	int fd;			/* -1 when not connected */
	guint watch;
	HaBackoff retry;
	bool ready;		/* qmp_capabilities answered */
	bool skipping;		/* dropping the rest of an over-long line */
	bool panicked;		/* GUEST_PANICKED seen from this QEMU */
	int64_t alive_since;	/* real time when this QEMU was first seen */
	GString *line;

	/* post-mortem (postmortem.h): the steps after a paused panic */
	HaPmOpts pm;
	char *pm_dir;		/* pm.dump_dir, owned */
	enum { PM_IDLE, PM_SIZING, PM_DUMPING, PM_DONE } pm_state;
	int64_t pm_panic_us;	/* monotonic time of GUEST_PANICKED */
	int64_t pm_dump_us;	/* monotonic time the dump was asked for */
	char *pm_core;		/* the dump's path */
};

static void qmp_close(HaQmp *q, const char *why, bool reconnect)
{
	if (q->fd < 0)
		return;
	g_message("%s: QMP %s: %s", q->domain, q->path, why);
	if (q->watch && g_main_current_source() &&
	    g_source_get_id(g_main_current_source()) == q->watch)
		q->watch = 0;	/* our caller returns G_SOURCE_REMOVE */
	if (q->watch)
		g_source_remove(q->watch);
	q->watch = 0;
	close(q->fd);
	q->fd = -1;
	q->ready = false;
	q->skipping = false;
	q->panicked = false;
	if (q->pm_state == PM_DUMPING && q->pm_core)
		unlink(q->pm_core);	/* QEMU went away mid-dump: a partial core */
	q->pm_state = PM_IDLE;
	g_string_truncate(q->line, 0);
	if (reconnect)
		ha_backoff_schedule(&q->retry);
}

/* Member @key of @o when it is a string, else NULL (owned by @o). */
static const char *obj_str(JsonObject *o, const char *key)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(n);
}

/* Member @key of @o when it is an integer of at least 0, else -1. */
static int64_t obj_int(JsonObject *o, const char *key)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;

	if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64)
		return -1;
	return MAX(json_node_get_int(n), -1);
}

/* Member @key of @o when it is an object, else NULL (owned by @o). */
static JsonObject *obj_obj(JsonObject *o, const char *key)
{
	JsonNode *n = o ? json_object_get_member(o, key) : NULL;

	return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}

/* The event's "timestamp" in microseconds of real time, or now. */
static int64_t event_time(JsonObject *msg)
{
	JsonObject *ts = obj_obj(msg, "timestamp");
	int64_t s = obj_int(ts, "seconds");
	int64_t us = obj_int(ts, "microseconds");

	if (s < 0 || us < 0 || us >= G_USEC_PER_SEC || s > G_MAXINT64 / G_USEC_PER_SEC - 1)
		return g_get_real_time();
	return s * G_USEC_PER_SEC + us;
}

static bool send_line(HaQmp *q, const char *text)
{
	size_t len = strlen(text), off = 0;

	/* A few bytes into an empty unix socket buffer: does not block in practice;
	 * MSG_DONTWAIT makes sure of it, and a short write ends the connection. */
	while (off < len) {
		ssize_t n = send(q->fd, text + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += (size_t)n;
	}
	return true;
}

/* The guest is dead and dumped (or cannot be): end QEMU unless asked not to. */
static void pm_finish(HaQmp *q)
{
	q->pm_state = PM_DONE;
	if (q->pm.keep_paused) {
		g_message("%s: QMP: the crashed guest stays paused (--keep-paused)", q->domain);
		return;
	}
	g_message("%s: QMP: quitting QEMU (the guest panicked; its memory is read)",
		  q->domain);
	send_line(q, "{\"execute\": \"quit\"}\n");
}

/* A recovery that could not even start: a postmortems row saying why. */
static void pm_fail(HaQmp *q, const char *why)
{
	/* the store's connection runs on its own thread: it waits meanwhile */
	g_autoptr(HaDriverHold) hold = ha_driver_hold_store(q->store);
	g_autoptr(GError) e = NULL;
	int64_t boot = ha_store_pm_crashed_boot(q->store, q->alive_since, &e);
	HaPmRow row = {
		.time_us = g_get_real_time(), .source = "qmp dump-guest-memory",
		.status = "failed", .message = why, .dump_ms = -1, .recover_ms = -1,
		.kernel_offset = -1,
	};

	g_warning("%s: post-mortem: %s", q->domain, why);
	if (boot > 0 && !ha_store_pm_save(q->store, boot, &row, NULL, &e))
		g_warning("%s: post-mortem: %s", q->domain, e->message);
	pm_finish(q);
}

/* dump-guest-memory into @path, detached, as one QMP line (json-glib escapes the path:
 * g_strescape()'s octal escapes are not JSON). */
static char *dump_command(const char *path)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree char *protocol = g_strconcat("file:", path, NULL);
	g_autofree char *text = NULL;

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "execute");
	json_builder_add_string_value(b, "dump-guest-memory");
	json_builder_set_member_name(b, "id");
	json_builder_add_string_value(b, "pm-dump");
	json_builder_set_member_name(b, "arguments");
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "paging");
	json_builder_add_boolean_value(b, FALSE);
	json_builder_set_member_name(b, "detach");
	json_builder_add_boolean_value(b, TRUE);
	json_builder_set_member_name(b, "protocol");
	json_builder_add_string_value(b, protocol);
	json_builder_end_object(b);
	json_builder_end_object(b);
	root = json_builder_get_root(b);
	text = json_to_string(root, FALSE);
	return g_strconcat(text, "\n", NULL);
}

/* query-memory-size-summary answered: dump when the RAM fits the bounds. */
static void pm_on_size(HaQmp *q, JsonObject *msg)
{
	JsonObject *ret = obj_obj(msg, "return");
	int64_t base = obj_int(ret, "base-memory");
	int64_t plugged = obj_int(ret, "plugged-memory");
	uint64_t ram = (uint64_t)MAX(base, 0) + (uint64_t)MAX(plugged, 0);
	struct statvfs vfs;
	g_autofree char *cmd = NULL, *why = NULL;

	if (base <= 0) {
		pm_fail(q, "QEMU did not say the guest's memory size");
		return;
	}
	if (ram > q->pm.max_bytes) {
		why = g_strdup_printf("guest RAM %" PRIu64 " MiB is over --dump-max-mb %" PRIu64
				      ": not dumped", ram >> 20, q->pm.max_bytes >> 20);
		pm_fail(q, why);
		return;
	}
	/* the core is the RAM plus headers and notes: keep 64 MiB beyond it free */
	if (statvfs(q->pm_dir, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < ram + (64ull << 20)) {
		why = g_strdup_printf("%s has %" PRIu64 " MiB free, the dump needs %" PRIu64
				      " MiB: not dumped", q->pm_dir,
				      ((uint64_t)vfs.f_bavail * vfs.f_frsize) >> 20,
				      (ram >> 20) + 64);
		pm_fail(q, why);
		return;
	}
	cmd = dump_command(q->pm_core);
	q->pm_state = PM_DUMPING;
	q->pm_dump_us = g_get_monotonic_time();
	g_message("%s: post-mortem: dumping %" PRIu64 " MiB of guest memory into %s",
		  q->domain, ram >> 20, q->pm_core);
	if (!send_line(q, cmd))
		pm_fail(q, "cannot send dump-guest-memory");
}

/* DUMP_COMPLETED: read the core into the crashed boot. */
static void pm_on_dumped(HaQmp *q, JsonObject *msg)
{
	/* the store's connection runs on its own thread: it waits meanwhile */
	g_autoptr(HaDriverHold) hold = ha_driver_hold_store(q->store);
	g_autoptr(GError) e = NULL;
	const char *err = obj_str(obj_obj(msg, "data"), "error");
	int64_t now = g_get_monotonic_time();
	int64_t dump_ms = (now - q->pm_dump_us) / 1000;
	int64_t boot;

	if (err) {
		g_autofree char *why = g_strdup_printf("dump-guest-memory failed: %s", err);

		unlink(q->pm_core);
		pm_fail(q, why);
		return;
	}
	boot = ha_store_pm_crashed_boot(q->store, q->alive_since, &e);
	if (boot <= 0) {
		g_warning("%s: post-mortem: no crashed boot to join the dump to%s%s", q->domain,
			  e ? ": " : "", e ? e->message : "");
	} else if (!ha_postmortem_recover(q->store, boot, q->pm_core, HA_PM_SOURCE_QMP,
					     dump_ms, &e)) {
		g_warning("%s: post-mortem of boot %" PRId64 ": %s", q->domain, boot,
			  e->message);
	} else {
		g_message("%s: post-mortem of boot %" PRId64 " ready %.3f s after"
			  " GUEST_PANICKED (dump %.3f s)", q->domain, boot,
			  (double)(g_get_monotonic_time() - q->pm_panic_us) / 1e6,
			  (double)dump_ms / 1e3);
	}
	if (!q->pm.keep_dump)
		unlink(q->pm_core);
	else
		g_message("%s: post-mortem: the dump stays in %s (--dump-keep)", q->domain,
			  q->pm_core);
	pm_finish(q);
}

/* GUEST_PANICKED: a paused guest still has its memory. */
static void pm_on_panic(HaQmp *q, const char *action)
{
	if (!q->pm.enabled || q->pm_state != PM_IDLE)
		return;
	if (g_strcmp0(action, "pause") != 0) {
		g_message("%s: post-mortem: the panic action is %s, not pause: no memory to"
			  " read (QEMU -action panic=pause)", q->domain, action ? action : "?");
		return;
	}
	q->pm_state = PM_SIZING;
	q->pm_panic_us = g_get_monotonic_time();
	if (!send_line(q, "{\"execute\": \"query-memory-size-summary\", \"id\": \"pm-size\"}\n"))
		pm_fail(q, "cannot send query-memory-size-summary");
}

/* A command's answer (a message with "return" or "error" and our "id"). */
static void on_reply(HaQmp *q, JsonObject *msg, const char *line)
{
	const char *id = obj_str(msg, "id");
	bool error = json_object_has_member(msg, "error");

	if (!id)
		return;
	if (strcmp(id, "pm-size") == 0 && q->pm_state == PM_SIZING) {
		if (error)
			pm_fail(q, "query-memory-size-summary failed");
		else
			pm_on_size(q, msg);
	} else if (strcmp(id, "pm-dump") == 0 && q->pm_state == PM_DUMPING && error) {
		const char *desc = obj_str(obj_obj(msg, "error"), "desc");
		g_autofree char *why = g_strdup_printf("dump-guest-memory refused: %s",
						       desc ? desc : line);

		pm_fail(q, why);
	}
}

static void on_event(HaQmp *q, JsonObject *msg, const char *event)
{
	JsonObject *data = obj_obj(msg, "data");
	int64_t when = event_time(msg);

	if (strcmp(event, "GUEST_PANICKED") == 0) {
		const char *action = obj_str(data, "action");
		g_autofree char *why = g_strdup_printf("QMP GUEST_PANICKED (action %s)",
						       action ? action : "?");

		q->panicked = true;
		ha_crash_mark(q->store, q->domain, when, q->alive_since, why);
		pm_on_panic(q, action);
	} else if (strcmp(event, "DUMP_COMPLETED") == 0) {
		if (q->pm_state == PM_DUMPING)
			pm_on_dumped(q, msg);
	} else if (strcmp(event, "SHUTDOWN") == 0) {
		const char *reason = obj_str(data, "reason");

		/* After GUEST_PANICKED with action poweroff: already marked. */
		if (reason && strcmp(reason, "guest-panic") == 0 && !q->panicked)
			ha_crash_mark(q->store, q->domain, when, q->alive_since,
				      "QMP SHUTDOWN (guest-panic)");
		else
			g_message("%s: QMP SHUTDOWN (%s)", q->domain, reason ? reason : "?");
	} else {
		g_debug("%s: QMP event %s", q->domain, event);
	}
}

/*
 * One line from QEMU: a JSON object, the greeting ("QMP"), a command's answer
 * ("return" or "error") or an event ("event"). A line that is not a JSON object is
 * logged and skipped. False: the negotiation failed (the connection is closed).
 */
static bool on_line(HaQmp *q, const char *line)
{
	g_autoptr(JsonParser) p = json_parser_new_immutable();
	g_autoptr(GError) e = NULL;
	JsonNode *root;
	JsonObject *msg;
	const char *event;

	if (!line[strspn(line, " \t\r")])
		return true;	/* QEMU ends its lines with \r\n */
	if (!json_parser_load_from_data(p, line, -1, &e) ||
	    !(root = json_parser_get_root(p)) || !JSON_NODE_HOLDS_OBJECT(root)) {
		g_warning("%s: QMP %s: not a JSON object, skipped (%s)", q->domain, q->path,
			  e ? e->message : "another JSON value");
		return true;
	}
	msg = json_node_get_object(root);
	if (!q->ready) {
		if (json_object_has_member(msg, "QMP"))
			return send_line(q, "{\"execute\": \"qmp_capabilities\"}\n");
		if (json_object_has_member(msg, "return")) {
			q->ready = true;
			g_message("%s: QMP %s: watching for guest panics", q->domain, q->path);
			return true;
		}
		if (json_object_has_member(msg, "error")) {
			g_warning("%s: QMP %s: %s", q->domain, q->path, line);
			return false;
		}
	}
	event = obj_str(msg, "event");
	if (event)
		on_event(q, msg, event);
	else if (json_object_has_member(msg, "return") || json_object_has_member(msg, "error"))
		on_reply(q, msg, line);
	return true;
}

static gboolean on_readable(gint fd, GIOCondition cond, gpointer user)
{
	HaQmp *q = user;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return G_SOURCE_CONTINUE;
	if (n <= 0) {
		qmp_close(q, n == 0 ? "QEMU closed it" : g_strerror(errno), true);
		return G_SOURCE_REMOVE;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			if (q->skipping)
				continue;
			if (q->line->len >= LINE_MAX_BYTES) {
				g_warning("%s: QMP %s: line over %d bytes skipped", q->domain,
					  q->path, LINE_MAX_BYTES);
				q->skipping = true;
				g_string_truncate(q->line, 0);
				continue;
			}
			g_string_append_c(q->line, buf[i]);
			continue;
		}
		if (!q->skipping && !on_line(q, q->line->str)) {
			qmp_close(q, "negotiation failed", true);
			return G_SOURCE_REMOVE;
		}
		q->skipping = false;
		g_string_truncate(q->line, 0);
	}
	return G_SOURCE_CONTINUE;
}

static bool try_connect(HaQmp *q)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(q->path) >= sizeof(sa.sun_path))
		return false;
	strcpy(sa.sun_path, q->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	/* A unix-socket connect completes or fails at once (EAGAIN: backlog full). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		g_debug("%s: QMP connect %s: %s", q->domain, q->path, g_strerror(errno));
		close(fd);
		return false;
	}
	q->fd = fd;
	q->alive_since = g_get_real_time();
	q->watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR, on_readable, q);
	g_debug("%s: QMP %s: connected", q->domain, q->path);
	return true;
}

static gboolean on_retry(gpointer user)
{
	HaQmp *q = user;

	if (try_connect(q)) {
		ha_backoff_reset(&q->retry);
		return G_SOURCE_REMOVE;
	}
	if (ha_backoff_first(&q->retry))
		g_message("%s: QMP %s not available, retrying with backoff up to %u ms",
			  q->domain, q->path, HA_BACKOFF_MAX_MS);
	ha_backoff_schedule(&q->retry);
	return G_SOURCE_REMOVE;
}

HaQmp *ha_qmp_new(const char *path, HaStore *store, const char *domain)
{
	HaQmp *q = g_new0(HaQmp, 1);

	q->path = g_strdup(path);
	q->store = store;
	q->domain = g_strdup(domain);
	q->fd = -1;
	ha_backoff_init(&q->retry, on_retry, q);
	q->line = g_string_new(NULL);
	return q;
}

void ha_qmp_start(HaQmp *q)
{
	if (!try_connect(q))
		on_retry(q);
}

void ha_qmp_set_postmortem(HaQmp *q, const HaPmOpts *o)
{
	q->pm = *o;
	g_free(q->pm_dir);
	g_free(q->pm_core);
	q->pm_dir = g_strdup(o->dump_dir ? o->dump_dir : ".");
	q->pm.dump_dir = q->pm_dir;
	q->pm_core = g_strdup_printf("%s/%s.core", q->pm_dir, q->domain);
}

void ha_qmp_free(HaQmp *q)
{
	if (!q)
		return;
	qmp_close(q, "host-agent stopping", false);
	ha_backoff_cancel(&q->retry);
	g_string_free(q->line, TRUE);
	g_free(q->path);
	g_free(q->domain);
	g_free(q->pm_dir);
	g_free(q->pm_core);
	g_free(q);
}
