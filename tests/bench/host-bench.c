// SPDX-License-Identifier: MIT
/*
 * host-bench - host-agent figures (prints, asserts nothing about time).
 *
 *  1. A synthetic guest stream (synth-guest --dump) of --events traced events.
 *  2. The physical limit: the same bytes through a unix socket into a file, fdatasync'd
 *     (one writer, one reader process).
 *  3. Ingest: the same bytes replayed into a real `host-agent --listen` over a unix
 *     socket, until the host ACKs the last frame (durable in SQLite): wall time, and
 *     the daemon's own CPU time (its connection's thread and the commit threads, all
 *     of them: cores in use = CPU time / wall time). --baseline runs
 *     another build in the same rounds (--repeat, medians) and prints the ratios.
 *  4. Stored bytes per event (database after a WAL checkpoint, and by part).
 *  5. `report top` and `report boots` latency on a store of --top-events events
 *     (default 10 million), streamed by synth-guest into a fresh daemon.
 *  6. Many guests: --guests (default 8) synthetic guests of --guest-events each, each
 *     serving its socket like QEMU (server=on), streamed at once into one
 *     `host-agent --socket-dir`: aggregate and per-guest rates, the daemon's CPU, and
 *     every stream's ACK latency (a frame's last byte written to the ACK covering it).
 *     With --slow-sync, the same again with vm0's store on a slow disk (its fsyncs
 *     --slow-ms longer): vm0's ACK latency, and the others' figures without it. Then
 *     vm0 as a steady guest (--rate-mb) beside the others' flood, until it ends: its
 *     ACK latency against the same guest's alone (3.), one hostile or greedy
 *     neighbourhood against a guest at the e2e rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"

static char *ha_path, *sg_path, *dir, *wrap, *only, *base_path, *slow_sync;
static gint64 slow_ms = 100;
static gint64 nevents = 2000000, top_events = 10000000, repeat = 3, paced_events = 100000;
static gint64 nguests = 8, guest_events = 250000;
static double rate_mb = 1.0;

static double now(void)
{
	return (double)g_get_monotonic_time() / 1e6;
}

static double proc_cpu(GPid pid)
{
	g_autofree char *path = g_strdup_printf("/proc/%d/stat", pid);
	g_autofree char *txt = NULL;
	unsigned long ut = 0, st = 0;
	char *p;

	if (!g_file_get_contents(path, &txt, NULL, NULL) || !(p = strrchr(txt, ')')))
		return 0;
	/* fields after ")": state(3) ... utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void run(char **argv)
{
	g_autoptr(GError) e = NULL;
	int status;

	if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL,
			  NULL, NULL, NULL, NULL, &status, &e) ||
	    !g_spawn_check_wait_status(status, &e)) {
		g_printerr("host-bench: %s: %s\n", argv[0], e->message);
		exit(1);
	}
}

static GPid start_daemon_of(const char *bin, const char *sock, const char *state,
			    const char *domain)
{
	char *tail[] = { (char *)bin, "--listen", (char *)sock, "--state-dir", (char *)state,
			 "--domain-name", (char *)domain, NULL };
	g_auto(GStrv) head = NULL;
	g_autoptr(GStrvBuilder) sb = g_strv_builder_new();
	g_auto(GStrv) argv = NULL;
	g_autoptr(GError) e = NULL;
	g_autofree char *log = g_build_filename(dir, "daemon.log", NULL);
	GPid pid;
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

	/* --wrap "perf record -g -o FILE --": the daemon runs under a profiler */
	if (wrap && !g_shell_parse_argv(wrap, NULL, &head, &e)) {
		g_printerr("host-bench: --wrap: %s\n", e->message);
		exit(2);
	}
	if (head)
		g_strv_builder_addv(sb, (const char **)head);
	g_strv_builder_addv(sb, (const char **)tail);
	argv = g_strv_builder_end(sb);
	if (!g_spawn_async_with_fds(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD |
				    G_SPAWN_SEARCH_PATH, NULL, NULL,
				    &pid, -1, fd, fd, &e)) {
		g_printerr("host-bench: %s\n", e->message);
		exit(1);
	}
	close(fd);
	for (int i = 0; i < 100 && !g_file_test(sock, G_FILE_TEST_EXISTS); i++)
		g_usleep(50000);
	return pid;
}

static GPid start_daemon(const char *sock, const char *state, const char *domain)
{
	return start_daemon_of(ha_path, sock, state, domain);
}

static void stop_daemon(GPid pid)
{
	int st;

	/* with --wrap, the wrapper forwards SIGTERM to the daemon (perf does) */
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	g_spawn_close_pid(pid);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("host-bench: connect");
		exit(1);
	}
	return fd;
}

static bool write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/*
 * The plain copy: socket -> file, fdatasync. Returns seconds, and in *@ret_cpu the
 * CPU time of its reading side (the part a daemon in its place would spend).
 */
static double plain_copy(const uint8_t *buf, size_t len, double *ret_cpu)
{
	int sv[2];
	pid_t child;
	double t0 = now();
	struct rusage ru;
	int st;

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	child = fork();
	if (child == 0) {
		g_autofree char *out = g_build_filename(dir, "copy.bin", NULL);
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		static uint8_t b[1 << 20];
		ssize_t n;

		close(sv[0]);
		while ((n = read(sv[1], b, sizeof(b))) > 0)
			if (!write_all(fd, b, (size_t)n))
				_exit(1);
		_exit(fdatasync(fd) == 0 && close(fd) == 0 ? 0 : 1);
	}
	close(sv[1]);
	write_all(sv[0], buf, len);
	close(sv[0]);
	wait4(child, &st, 0, &ru);
	*ret_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		   (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return now() - t0;
}

/* Replay the stream into the daemon until the last frame is ACKed. */
static double ingest(const uint8_t *buf, size_t len, const char *sock, uint64_t last_seq)
{
	int fd = connect_to(sock);
	struct smp_decoder *dec = smp_decoder_new(64);
	uint64_t acked = 0;
	size_t off = 0;
	double t0 = now();

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (acked < last_seq) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (off < len ? POLLOUT : 0) };
		uint8_t *space;
		size_t room;
		ssize_t n;
		struct smp_frame f;

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		if ((p.revents & POLLOUT) && off < len) {
			n = write(fd, buf + off, MIN(len - off, (size_t)(1 << 20)));
			if (n > 0)
				off += (size_t)n;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		room = smp_decoder_space(dec, &space);
		n = read(fd, space, room);
		if (n == 0)
			break;
		if (n > 0)
			smp_decoder_commit(dec, (size_t)n);
		while (smp_decoder_next(dec, &f, NULL) != 0)
			if (f.type == SMP_ACK && f.len == 8)
				smp_ack_decode(&acked, f.payload, f.len);
	}
	close(fd);
	smp_decoder_free(dec);
	if (acked < last_seq) {
		g_printerr("host-bench: only %" PRIu64 " of %" PRIu64 " frames acked\n", acked,
			   last_seq);
		exit(1);
	}
	return now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(GArray *a)
{
	g_array_sort(a, cmp_double);
	return a->len ? g_array_index(a, double, a->len / 2) : 0;
}

static int64_t q1(sqlite3 *db, const char *sql);

typedef struct {
	uint64_t seq;
	double sent;
} Sent;

/*
 * A guest at a steady rate: the stream's frames written at @rate bytes per second
 * (each when it is due), and for every frame the time from its write to the ACK that
 * covers it (commit to durable, as the guest sees it), into @lat (seconds).
 */
static void paced(const uint8_t *buf, size_t len, const char *sock, uint64_t last_seq,
		  double rate, GArray *lat)
{
	int fd = connect_to(sock);
	struct smp_decoder *dec = smp_decoder_new(64);
	g_autoptr(GArray) sent = g_array_new(FALSE, FALSE, sizeof(Sent));
	uint64_t acked = 0;
	size_t off = 0, fpos = 0, head = 0;
	double t0 = now();

	while (acked < last_seq) {
		double due = off < len ? t0 + (double)off / rate : 0, t = now();
		int timeout = off < len ? (int)MAX((due - t) * 1000, 0) : 1000;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct smp_frame f;
		uint8_t *space;
		size_t room;
		ssize_t n;

		if (off < len && t >= due) {
			uint32_t plen;
			uint64_t seq;

			/* whole frames, one at a time, blocking: a guest's write */
			memcpy(&plen, buf + fpos + 8, 4);
			memcpy(&seq, buf + fpos + 16, 8);
			if (!write_all(fd, buf + fpos, SMP_HDR_SIZE + plen))
				break;
			g_array_append_val(sent, ((Sent){ .seq = seq, .sent = now() }));
			fpos += SMP_HDR_SIZE + plen;
			off = fpos;
			timeout = 0;
		}
		if (poll(&p, 1, timeout) <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		room = smp_decoder_space(dec, &space);
		n = read(fd, space, room);
		if (n == 0)
			break;
		if (n > 0)
			smp_decoder_commit(dec, (size_t)n);
		while (smp_decoder_next(dec, &f, NULL) != 0) {
			if (f.type != SMP_ACK || f.len != 8 || smp_ack_decode(&acked, f.payload,
									    f.len) < 0)
				continue;
			for (t = now(); head < sent->len &&
			     g_array_index(sent, Sent, head).seq <= acked; head++)
				g_array_append_vals(lat, &(double){
					t - g_array_index(sent, Sent, head).sent }, 1);
		}
	}
	close(fd);
	smp_decoder_free(dec);
	if (acked < last_seq) {
		g_printerr("host-bench: paced: only %" PRIu64 " of %" PRIu64 " frames acked\n",
			   acked, last_seq);
		exit(1);
	}
}

static double pct(GArray *a, double q)
{
	g_array_sort(a, cmp_double);
	return a->len ? g_array_index(a, double, MIN((guint)(q * a->len), a->len - 1)) : 0;
}

/* The highest sequence number among the frames of a synth-guest --dump stream. */
static uint64_t stream_last_seq(const uint8_t *data, size_t len)
{
	uint64_t last = 0;

	for (size_t off = 0; off + SMP_HDR_SIZE <= len;) {
		uint32_t plen;
		uint64_t seq;

		memcpy(&plen, data + off + 8, 4);
		memcpy(&seq, data + off + 16, 8);
		last = MAX(last, seq);
		off += SMP_HDR_SIZE + plen;
	}
	return last;
}

/* The commit latency at a steady, guest-like rate (--rate-mb), and the stored size. */
static void run_paced(const char *state)
{
	g_autofree char *stream = g_strdup_printf("%s/stream-paced.bin", dir);
	g_autofree char *sock = g_strdup_printf("%s/sock-paced", dir);
	g_autofree char *ev = g_strdup_printf("%" G_GINT64_FORMAT, paced_events);
	char *gargv[] = { sg_path, "--dump", stream, "--events", ev, "--cpus", "2",
			  "--stacks", "1000", "--epochs", "1", "-q", NULL };
	g_autofree char *data = NULL;
	gsize len;
	uint64_t last_seq;

	run(gargv);
	if (!g_file_get_contents(stream, &data, &len, NULL))
		exit(1);
	last_seq = stream_last_seq((const uint8_t *)data, len);
	printf("\n steady guest: %" G_GINT64_FORMAT " events (%.1f MB of frames) at %.2f MB/s,"
	       " frame by frame; commit to durable = a frame's write to the ACK covering it\n",
	       paced_events, (double)len / 1e6, rate_mb);
	for (int v = base_path ? 0 : 1; v < 2; v++) {
		g_autofree char *st = g_strdup_printf("%s/paced-%d", state, v);
		g_autofree char *db = g_strdup_printf("%s/paced.db", st);
		g_autoptr(GArray) lat = g_array_new(FALSE, FALSE, sizeof(double));
		GPid pid = start_daemon_of(v ? ha_path : base_path, sock, st, "paced");
		struct stat sb;
		int64_t chunks = 0, zdata, freeb;
		sqlite3 *h;

		paced((const uint8_t *)data, len, sock, last_seq, rate_mb * 1e6, lat);
		stop_daemon(pid);
		sqlite3_open(db, &h);
		sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
		chunks = q1(h, "SELECT COUNT(*) FROM chunks");
		zdata = q1(h, "SELECT SUM(length(data)) FROM chunks");
		freeb = q1(h, "PRAGMA freelist_count") * q1(h, "PRAGMA page_size");
		sqlite3_close(h);
		stat(db, &sb);
		printf("  %s: commit to durable p50 %.1f ms, p99 %.1f ms, max %.1f ms over %u"
		       " frames; stored %.2f B/event (%.2f B/event of it free pages, which"
		       " later chunks reuse), zstd pages %.2f B/event in %" PRId64 " chunks\n",
		       v ? "host-agent" : "baseline  ", pct(lat, 0.5) * 1e3, pct(lat, 0.99) * 1e3,
		       pct(lat, 1.0) * 1e3, lat->len, (double)sb.st_size / (double)paced_events,
		       (double)freeb / (double)paced_events,
		       (double)zdata / (double)paced_events, chunks);
	}
	g_unlink(stream);
}

static int64_t q1(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static double time_report(const char *state, const char *domain, const char *what)
{
	char *argv[] = { ha_path, "report", (char *)what, "--state-dir", (char *)state,
			 "--domain-name", (char *)domain, NULL };
	g_autoptr(GError) e = NULL;
	g_autofree char *out = NULL;
	int status;
	double t0 = now();

	if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, NULL, &status,
			  &e) || !g_spawn_check_wait_status(status, &e)) {
		g_printerr("host-bench: report %s: %s\n", what, e->message);
		exit(1);
	}
	return now() - t0;
}

/* What one guest of run_guests() measured: when it was connected and done, and the
 * ACK latency percentiles of its stream (seconds). */
typedef struct {
	double t_accept;
	double t_done;
	double p50, p99, max;
	uint64_t acked;
	uint64_t last;		/* the last seq it wrote (a paced guest stops early) */
	uint64_t frames;	/* frames whose ACK latency it took */
	int done;		/* a flooder: its stream is acknowledged */
} GuestResult;

/* The end of the whole frames of @buf (@len bytes) from @end that start before @upto. */
static size_t frames_upto(const uint8_t *buf, size_t len, size_t end, size_t upto)
{
	while (end + SMP_HDR_SIZE <= len && end < upto) {
		uint32_t plen;

		memcpy(&plen, buf + end + 8, 4);
		if (end + SMP_HDR_SIZE + plen > len)
			break;
		end += SMP_HDR_SIZE + plen;
	}
	return end;
}

/*
 * A guest serving @path like QEMU: accept the host's connection, write the stream as
 * fast as the host reads it, and time each frame's last byte written to the ACK that
 * covers it. With @rate (bytes per second), a paced guest beside flooders: each frame
 * written when it is due, until every guest in @others (@nothers of them) is done; its
 * stream then ends at the last frame written.
 */
static void guest_serve(const char *path, const uint8_t *buf, size_t len,
			uint64_t last_seq, GuestResult *res, double rate,
			const GuestResult *others, gint64 nothers)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0), fd;
	struct smp_decoder *dec = smp_decoder_new(64);
	g_autoptr(GArray) sent = g_array_new(FALSE, FALSE, sizeof(Sent));
	g_autoptr(GArray) lat = g_array_new(FALSE, FALSE, sizeof(double));
	size_t off = 0, fpos = 0, head = 0, lim = len;
	uint64_t acked = 0;

	g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0) {
		perror("host-bench: guest socket");
		_exit(1);
	}
	fd = accept(lfd, NULL, NULL);
	close(lfd);
	res->t_accept = now();
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (rate > 0)
		lim = 0;
	while (acked < last_seq && fd >= 0) {
		struct pollfd p = { .fd = fd };
		struct smp_frame f;
		uint8_t *space;
		size_t room;
		ssize_t n;
		int timeout = -1;
		double t;

		if (rate > 0 && lim < len) {
			gint64 busy = 0;

			for (gint64 i = 0; i < nothers; i++)
				busy += !__atomic_load_n(&others[i].done, __ATOMIC_ACQUIRE);
			if (!busy) {
				/* the flood is over: this stream ends at what was written */
				len = lim;
				last_seq = stream_last_seq(buf, len);
				if (acked >= last_seq)
					break;
			} else {
				lim = frames_upto(buf, len, lim,
						  (size_t)((now() - res->t_accept) * rate) + 1);
				timeout = 1 + (int)MAX(0, (res->t_accept + (double)lim / rate -
							   now()) * 1e3);
			}
		}
		p.events = POLLIN | (off < lim ? POLLOUT : 0);
		if (poll(&p, 1, timeout) < 0 && errno != EINTR)
			break;
		if ((p.revents & POLLOUT) && off < lim) {
			n = write(fd, buf + off, MIN(lim - off, (size_t)(256 << 10)));
			if (n > 0)
				off += (size_t)n;
			/* the frames whose last byte has now left */
			for (t = now(); fpos + SMP_HDR_SIZE <= len;) {
				uint32_t plen;
				uint64_t seq;

				memcpy(&plen, buf + fpos + 8, 4);
				memcpy(&seq, buf + fpos + 16, 8);
				if (fpos + SMP_HDR_SIZE + plen > off)
					break;
				g_array_append_val(sent, ((Sent){ .seq = seq, .sent = t }));
				fpos += SMP_HDR_SIZE + plen;
			}
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		room = smp_decoder_space(dec, &space);
		n = read(fd, space, room);
		if (n == 0)
			break;
		if (n > 0)
			smp_decoder_commit(dec, (size_t)n);
		while (smp_decoder_next(dec, &f, NULL) != 0) {
			if (f.type != SMP_ACK || f.len != 8 ||
			    smp_ack_decode(&acked, f.payload, f.len) < 0)
				continue;
			for (t = now(); head < sent->len &&
			     g_array_index(sent, Sent, head).seq <= acked; head++)
				g_array_append_vals(lat, &(double){
					t - g_array_index(sent, Sent, head).sent }, 1);
		}
	}
	res->t_done = now();
	res->acked = acked;
	res->last = last_seq;
	res->frames = lat->len;
	__atomic_store_n(&res->done, 1, __ATOMIC_RELEASE);
	res->p50 = pct(lat, 0.5);
	res->p99 = pct(lat, 0.99);
	res->max = pct(lat, 1.0);
	close(fd);
	smp_decoder_free(dec);
}

/* What vm0 is in a many-guests run; the others write as fast as the host reads. */
enum vm0_kind {
	VM0_FLOODS,		/* as the others */
	VM0_SLOW_DISK,		/* its store on a slow disk (--slow-sync) */
	VM0_PACED,		/* a steady guest (--rate-mb) beside the flood */
};

/* --guests guests at once into one `host-agent --socket-dir`, vm0 as @vm0 says. */
static void run_guests(const char *state, enum vm0_kind vm0)
{
	bool slow = vm0 == VM0_SLOW_DISK, paced = vm0 == VM0_PACED;
	const char *tag = slow ? "-slow" : paced ? "-paced" : "";
	g_autofree char *stream = g_strdup_printf("%s/stream-guest.bin", dir);
	g_autofree char *vms = g_strdup_printf("%s/vms%s", dir, tag);
	g_autofree char *st = g_strdup_printf("%s/guests%s", state, tag);
	g_autofree char *ev = g_strdup_printf("%" G_GINT64_FORMAT, guest_events);
	char *gargv[] = { sg_path, "--dump", stream, "--events", ev, "--cpus", "2",
			  "--stacks", "1000", "--epochs", "4", "-q", NULL };
	char *dargv[] = { ha_path, "--socket-dir", vms, "--state-dir", st, NULL };
	g_autofree char *data = NULL;
	g_autoptr(GError) e = NULL;
	GuestResult *res;
	gint64 n;
	double first = 1e300, last = 0, cpu0, cpu1, worst = 0, slowest = 1e300;
	g_autofree char *cpu_txt = NULL;
	uint64_t last_seq;
	gsize len;
	GPid pid;
	int status;

	run(gargv);
	if (!g_file_get_contents(stream, &data, &len, NULL))
		exit(1);
	last_seq = stream_last_seq((const uint8_t *)data, len);
	g_mkdir_with_parents(vms, 0755);
	res = mmap(NULL, sizeof(*res) * (size_t)nguests, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (gint64 i = 0; i < nguests; i++) {
		if (fork() == 0) {
			g_autofree char *path = g_strdup_printf("%s/vm%d.sock", vms, (int)i);

			if (paced && i == 0)
				guest_serve(path, (const uint8_t *)data, len, last_seq, &res[i],
					    rate_mb * 1e6, res + 1, nguests - 1);
			else
				guest_serve(path, (const uint8_t *)data, len, last_seq, &res[i],
					    0, NULL, 0);
			_exit(0);
		}
	}
	for (int i = 0; i < 100; i++) {
		g_autofree char *path = g_strdup_printf("%s/vm%d.sock", vms, (int)nguests - 1);

		if (g_file_test(path, G_FILE_TEST_EXISTS))
			break;
		g_usleep(20000);
	}
	g_usleep(100000);
	{
		g_autofree char *log = g_build_filename(dir, "daemon.log", NULL);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		g_auto(GStrv) env = g_get_environ();

		if (slow) {
			g_autofree char *ms = g_strdup_printf("%" G_GINT64_FORMAT, slow_ms);

			env = g_environ_setenv(env, "LD_PRELOAD", slow_sync, TRUE);
			env = g_environ_setenv(env, "SLOWSYNC_MATCH", "/vm0.db", TRUE);
			env = g_environ_setenv(env, "SLOWSYNC_DELAY_MS", ms, TRUE);
			/* opening and migrating the store, its HELLO: at the disk's speed
			 * (they run on the main loop); the stream's commits are slow */
			env = g_environ_setenv(env, "SLOWSYNC_SKIP", "12", TRUE);
		}
		if (!g_spawn_async_with_fds(NULL, dargv, env, G_SPAWN_DO_NOT_REAP_CHILD, NULL,
					    NULL, &pid, -1, fd, fd, &e)) {
			g_printerr("host-bench: %s\n", e->message);
			exit(1);
		}
		close(fd);
	}
	cpu0 = proc_cpu(pid);
	for (gint64 i = 0; i < nguests; i++)
		wait(&status);
	cpu1 = proc_cpu(pid);
	stop_daemon(pid);
	printf("\n %" G_GINT64_FORMAT " guests at once into one host-agent --socket-dir, each"
	       " %" G_GINT64_FORMAT " events (%.1f MB of frames, 2 CPUs), written as fast as"
	       " the host reads\n", nguests, guest_events, (double)len / 1e6);
	if (slow)
		printf("  vm0's store on a slow disk: each of its fsyncs but the first 12 (the"
		       " store's opening and HELLO) %" G_GINT64_FORMAT " ms longer (%s)\n",
		       slow_ms, slow_sync);
	if (paced)
		printf("  vm0 a steady guest at %.1f MB/s (as --rate-mb alone above), the others"
		       " flooding, until the flood ends\n", rate_mb);
	for (gint64 i = 0; i < nguests; i++) {
		double w = res[i].t_done - res[i].t_accept;

		if (slow && i == 0) {
			printf("  vm0 (slow disk): %6.2f s, ACK latency p50 %.1f ms, p99 %.1f ms,"
			       " max %.1f ms\n", w, res[i].p50 * 1e3, res[i].p99 * 1e3,
			       res[i].max * 1e3);
			if (res[i].acked < last_seq) {
				g_printerr("host-bench: vm0: only %" PRIu64 " of %" PRIu64
					   " acked\n", res[i].acked, last_seq);
				exit(1);
			}
			continue;	/* the others' figures below are without it */
		}
		if (paced && i == 0) {
			printf("  vm0 (steady, beside the flood): %6.2f s, %" PRIu64 " frames;"
			       " ACK latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", w,
			       res[i].frames, res[i].p50 * 1e3, res[i].p99 * 1e3,
			       res[i].max * 1e3);
			if (res[i].acked < res[i].last) {
				g_printerr("host-bench: vm0: only %" PRIu64 " of %" PRIu64
					   " acked\n", res[i].acked, res[i].last);
				exit(1);
			}
			continue;	/* the others' figures below are without it */
		}

		if (res[i].acked < last_seq) {
			g_printerr("host-bench: guest %d: only %" PRIu64 " of %" PRIu64 " acked\n",
				   (int)i, res[i].acked, last_seq);
			exit(1);
		}
		first = MIN(first, res[i].t_accept);
		last = MAX(last, res[i].t_done);
		slowest = MIN(slowest, (double)guest_events / w);
		worst = MAX(worst, res[i].p99);
		printf("  vm%d: %6.2f s, %8.0f events/s, %6.1f MB/s; ACK latency p50 %.1f ms,"
		       " p99 %.1f ms, max %.1f ms\n", (int)i, w, (double)guest_events / w,
		       (double)len / 1e6 / w, res[i].p50 * 1e3, res[i].p99 * 1e3,
		       res[i].max * 1e3);
	}
	n = slow || paced ? nguests - 1 : nguests;
	/* under --wrap the CPU measured is the wrapper's, not the daemon's */
	cpu_txt = wrap ? g_strdup("daemon CPU not measured under --wrap") :
		  g_strdup_printf("daemon CPU %.2f s (%.2f cores), %.0f events per CPU-second",
				  cpu1 - cpu0, (cpu1 - cpu0) / (last - first),
				  (double)(nguests * guest_events) / MAX(cpu1 - cpu0, 1e-3));
	printf("  => %saggregate %.0f events/s, %.1f MB/s over %.2f s; slowest guest %.0f"
	       " events/s; worst stream's ACK latency p99 %.1f ms; %s\n",
	       slow || paced ? "the others: " : "",
	       (double)(n * guest_events) / (last - first),
	       (double)len * (double)n / 1e6 / (last - first), last - first, slowest,
	       worst * 1e3, cpu_txt);
	munmap(res, sizeof(*res) * (size_t)nguests);
	g_unlink(stream);
}

/* Dump, plain copy, ingest and measure one variant; returns stored bytes per event. */
static double run_variant(const char *title, const char *name, const char *opt1,
			  const char *opt2, const char *state)
{
	g_autofree char *stream = g_strdup_printf("%s/stream-%s.bin", dir, name);
	g_autofree char *sock = g_strdup_printf("%s/sock-%s", dir, name);
	g_autofree char *ev = g_strdup_printf("%" G_GINT64_FORMAT, nevents);
	g_autofree char *domain = g_strdup_printf("bench-%s", name);
	g_autofree char *db = NULL;
	char *gargv[16] = { sg_path, "--dump", stream, "--events", ev, "--cpus", "2",
			    "--stacks", "1000", "--epochs", "4", "-q" };
	int na = 12, fd;
	uint8_t *buf;
	struct stat sb;
	uint64_t last_seq = 0;
	double tcopy, tingest, cpu0, cpu1, per_event;
	GPid pid;

	if (only && strcmp(only, name))
		return 0;
	if (opt1)
		gargv[na++] = (char *)opt1;
	if (opt2)
		gargv[na++] = (char *)opt2;
	gargv[na] = NULL;
	run(gargv);
	fd = open(stream, O_RDONLY);
	fstat(fd, &sb);
	buf = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	for (size_t off = 0; off + SMP_HDR_SIZE <= (size_t)sb.st_size;) {
		uint32_t plen;
		uint64_t seq;

		memcpy(&plen, buf + off + 8, 4);
		memcpy(&seq, buf + off + 16, 8);
		last_seq = MAX(last_seq, seq);
		off += SMP_HDR_SIZE + plen;
	}
	printf("\n %s: %.1f MB of frames, %" PRIu64 " frames, %.1f B/event on the wire\n",
	       title, (double)sb.st_size / 1e6, last_seq, (double)sb.st_size / (double)nevents);

	/*
	 * --repeat rounds, each: the plain copy, then (with --baseline) the baseline
	 * daemon and this one, each into a store of its own; medians printed. The
	 * rounds alternate so that a change of the machine's load hits both alike, and
	 * so does the order within a round (odd rounds run the baseline second): neither
	 * daemon always follows the plain copy's writeback.
	 */
	{
		g_autoptr(GArray) tc = g_array_new(FALSE, FALSE, sizeof(double));
		g_autoptr(GArray) tcu = g_array_new(FALSE, FALSE, sizeof(double));
		GArray *tw[2] = { g_array_new(FALSE, FALSE, sizeof(double)),
				  g_array_new(FALSE, FALSE, sizeof(double)) };
		GArray *tu[2] = { g_array_new(FALSE, FALSE, sizeof(double)),
				  g_array_new(FALSE, FALSE, sizeof(double)) };
		double mb = (double)sb.st_size / 1e6, mc, mcu, mw[2] = { 0 }, mu[2] = { 0 };
		double copy_cpu;

		for (gint64 r = 0; r < repeat; r++) {
			tcopy = plain_copy(buf, (size_t)sb.st_size, &copy_cpu);
			g_array_append_val(tc, tcopy);
			g_array_append_val(tcu, copy_cpu);
			for (int i = base_path ? 0 : 1; i < 2; i++) {
				int v = base_path && r % 2 ? 1 - i : i;
				g_autofree char *st = g_strdup_printf("%s/%s-%d-%d", state,
								      name, v, (int)r);
				g_autofree char *dom = g_strdup_printf("bench-%s", name);

				pid = start_daemon_of(v ? ha_path : base_path, sock,
						      r == repeat - 1 && v ? state : st,
						      dom);
				cpu0 = proc_cpu(pid);
				tingest = ingest(buf, (size_t)sb.st_size, sock, last_seq);
				cpu1 = proc_cpu(pid);
				stop_daemon(pid);
				g_array_append_val(tw[v], tingest);
				g_array_append_vals(tu[v], &(double){ cpu1 - cpu0 }, 1);
				if (!(r == repeat - 1 && v)) {
					char *rm[] = { "rm", "-rf", st, NULL };

					run(rm);
				}
			}
		}
		mc = median(tc);
		mcu = MAX(median(tcu), 1e-3);
		printf("  plain copy socket->file+fdatasync: %7.3f s  %8.1f MB/s  %10.0f"
		       " events/s; its reader's CPU %.2f s: %.1f MB/s per core\n", mc, mb / mc,
		       (double)nevents / mc, mcu, mb / mcu);
		for (int v = base_path ? 0 : 1; v < 2; v++) {
			g_autofree char *cpu_txt = NULL;

			mw[v] = median(tw[v]);
			mu[v] = MAX(median(tu[v]), 1e-3);
			/* under --wrap the CPU measured is the wrapper's, not the daemon's */
			cpu_txt = wrap ? g_strdup("daemon CPU not measured under --wrap") :
				  g_strdup_printf("daemon CPU %.2f s: %.1f MB/s and %.0f events/s"
						  " per core, %.1f %% of the plain copy's MB/s",
						  mu[v], mb / mu[v], (double)nevents / mu[v],
						  100.0 * mc / mu[v]);
			printf("  %s ingest (to last ACK): %7.3f s  %8.1f MB/s  %10.0f events/s;"
			       " %s\n", v ? "host-agent" : "baseline  ", mw[v], mb / mw[v],
			       (double)nevents / mw[v], cpu_txt);
		}
		/* issue 14's per-core targets, for the whole synthetic kmalloc stream */
		if (!strcmp(name, "full") && !wrap) {
			double eps = (double)nevents / mu[1], share = 100.0 * mc / mu[1];

			printf("  => per core of daemon CPU: %.2f M events/s (target 5 M: %s), %.1f"
			       " %% of the plain copy's MB/s (target 50 %%: %s)\n", eps / 1e6,
			       eps >= 5e6 ? "met" : "not met", share,
			       share >= 50.0 ? "met" : "not met");
		}
		if (base_path && !wrap)
			printf("  => this host-agent against the baseline: %.2fx the wall-clock"
			       " rate, %.2fx the events per CPU-second (medians of %" G_GINT64_FORMAT
			       " rounds)\n", mw[0] / mw[1], mu[0] / mu[1], repeat);
		for (int v = 0; v < 2; v++) {
			g_array_unref(tw[v]);
			g_array_unref(tu[v]);
		}
	}
	munmap(buf, (size_t)sb.st_size);
	close(fd);
	g_unlink(stream);

	db = g_strdup_printf("%s/%s.db", state, domain);
	{
		sqlite3 *h;
		int64_t pages, data, stacks, counts, total;

		sqlite3_open(db, &h);
		sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
		pages = q1(h, "SELECT SUM(raw_bytes) FROM chunks");
		data = q1(h, "SELECT SUM(length(data)) FROM chunks");
		/* pages on disk of the tables (dbstat): rows, indexes and slack included */
		counts = q1(h, "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name ="
			    " 'stack_counts'");
		stacks = q1(h, "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN"
			    " ('stacks', 'fullstacks', 'sqlite_autoindex_fullstacks_1')");
		sqlite3_close(h);
		stat(db, &sb);
		total = sb.st_size;
		per_event = (double)total / (double)nevents;
		printf("  stored: %.2f B/event in the database file (%.1f MB); zstd pages %.2f"
		       " B/event (raw %.1f B/event, %.1fx), stack counts %.3f B/event, stack"
		       " texts %.3f B/event\n", per_event, (double)total / 1e6,
		       (double)data / (double)nevents, (double)pages / (double)nevents,
		       (double)pages / (double)MAX(data, 1), (double)counts / (double)nevents,
		       (double)stacks / (double)nevents);
	}
	return per_event;
}

int main(int argc, char **argv)
{
	GOptionEntry entries[] = {
		{ "host-agent", 0, 0, G_OPTION_ARG_FILENAME, &ha_path, "host-agent binary", "PATH" },
		{ "synth-guest", 0, 0, G_OPTION_ARG_FILENAME, &sg_path, "synth-guest binary", "PATH" },
		{ "events", 0, 0, G_OPTION_ARG_INT64, &nevents, "Events for the ingest run", "N" },
		{ "top-events", 0, 0, G_OPTION_ARG_INT64, &top_events, "Events for the report run (0: skip)", "N" },
		{ "wrap", 0, 0, G_OPTION_ARG_STRING, &wrap, "Run the ingest daemon under this command (a profiler)", "CMD" },
		{ "only", 0, 0, G_OPTION_ARG_STRING, &only, "Only this variant: full, sid or none (or guests: none but the many-guests run)", "NAME" },
		{ "baseline", 0, 0, G_OPTION_ARG_FILENAME, &base_path, "Another host-agent to compare with, in the same rounds", "PATH" },
		{ "repeat", 0, 0, G_OPTION_ARG_INT64, &repeat, "Rounds per variant (medians printed)", "N" },
		{ "paced-events", 0, 0, G_OPTION_ARG_INT64, &paced_events, "Events of the steady-rate run (0: skip)", "N" },
		{ "rate-mb", 0, 0, G_OPTION_ARG_DOUBLE, &rate_mb, "MB/s of the steady-rate run (e2e under TCG: about 1)", "R" },
		{ "guests", 0, 0, G_OPTION_ARG_INT64, &nguests, "Guests of the many-guests run (0: skip)", "N" },
		{ "guest-events", 0, 0, G_OPTION_ARG_INT64, &guest_events, "Events per guest of that run", "N" },
		{ "slow-sync", 0, 0, G_OPTION_ARG_FILENAME, &slow_sync, "slow-sync.so: the many-guests run again with vm0's store on a slow disk", "PATH" },
		{ "slow-ms", 0, 0, G_OPTION_ARG_INT64, &slow_ms, "Milliseconds each of vm0's fsyncs takes longer (--slow-sync)", "MS" },
		G_OPTION_ENTRY_NULL,
	};
	g_autoptr(GOptionContext) ctx = g_option_context_new("- host-agent benchmark");
	g_autoptr(GError) e = NULL;
	g_autofree char *state = NULL;
	GPid pid;

	g_option_context_add_main_entries(ctx, entries, NULL);
	if (!g_option_context_parse(ctx, &argc, &argv, &e) || !ha_path || !sg_path || repeat < 1) {
		g_printerr("host-bench: --host-agent and --synth-guest are required, --repeat >= 1\n");
		return 2;
	}
	dir = g_dir_make_tmp("host-bench-XXXXXX", NULL);
	state = g_build_filename(dir, "state", NULL);
	printf("host-agent benchmark: %" G_GINT64_FORMAT " synthetic kmalloc events, 2 CPUs,"
	       " 4 epochs, 1000 stacks per epoch (zipf-like), one ingest run per variant\n",
	       nevents);
	{
		double full = run_variant("with stack_id events (1/64 of stacks full kernel_stack)",
					  "full", NULL, NULL, state);
		double sid = run_variant("with stack_id events only", "sid", "--no-deep", NULL,
					 state);
		double none = run_variant("without stack events", "none", "--no-deep",
					  "--no-stacks", state);

		if (!only)
			printf("  => stored cost of the stack_id events alone: %.2f B per event"
			       " (stack_id-only run minus no-stack run); full-stack fallback run:"
			       " %.2f B/event\n", sid - none, full);
	}

	if (paced_events > 0)
		run_paced(state);
	if (nguests > 0 && guest_events > 0 && (!only || !strcmp(only, "guests")))
		run_guests(state, VM0_FLOODS);
	if (slow_sync && nguests > 1 && guest_events > 0 && (!only || !strcmp(only, "guests")))
		run_guests(state, VM0_SLOW_DISK);
	if (nguests > 1 && guest_events > 0 && (!only || !strcmp(only, "guests")))
		run_guests(state, VM0_PACED);
	if (top_events > 0) {
		g_autofree char *tsock = g_build_filename(dir, "sock-top", NULL);
		g_autofree char *tev = g_strdup_printf("%" G_GINT64_FORMAT, top_events);
		char *gargv[] = { sg_path, "--connect", tsock, "--events", tev, "--cpus", "2",
				  "--stacks", "2000", "--epochs", "8", "-q", NULL };
		double t0 = now(), tr, tb;

		pid = start_daemon(tsock, state, "top");
		run(gargv);
		stop_daemon(pid);
		printf("  %s events streamed and stored in %.1f s (generator included)\n", tev,
		       now() - t0);
		time_report(state, "top", "boots");	/* warm the page cache */
		tr = time_report(state, "top", "top");
		tb = time_report(state, "top", "boots");
		printf("  report top on %s events: %.3f s; report boots: %.3f s\n", tev, tr, tb);
	}
	{
		char *rm[] = { "rm", "-rf", dir, NULL };

		run(rm);
	}
	return 0;
}
