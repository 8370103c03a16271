// SPDX-License-Identifier: MIT
/*
 * main.c - stackmap-guestd: options, signals, the connection life cycle and the poll
 * loop. What is read and framed lives in the files agent.h lists; the protocol state
 * in session.c.
 *
 * The loop never blocks anywhere but in poll(): the rings and the port are
 * non-blocking, the host's absence is a state (POLLHUP on a virtio port, a failed
 * connect on a socket), and every periodic job is a deadline that sets poll's timeout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>

#include "agent.h"
#include "log.h"
#include "util.h"

#define DEFAULT_PORT_NAME "org.stackmap.0"
#define SESS_CLOSE_BACKOFF_MS 5000u

static void usage(FILE *f)
{
	fprintf(f,
"Usage: stackmap-guestd [OPTIONS]\n"
"Stream this guest's ftrace ring buffers and stack map deltas to the host over the\n"
"virtio-serial port " DEFAULT_PORT_NAME ".\n"
"\n"
"Transport:\n"
"  --port-name NAME     virtio-serial port name to look for (default " DEFAULT_PORT_NAME ")\n"
"  --port PATH          use this device or unix socket instead of looking it up\n"
"  --sysfs DIR          sysfs root (default /sys)\n"
"  --devdir DIR         device directory of the port (default /dev)\n"
"  --procfs DIR         procfs root (default /proc)\n"
"  --tracefs DIR        tracefs root (default /sys/kernel/tracing, mounted if needed)\n"
"Streaming:\n"
"  --flush-ms N         an event is on the wire within N ms of being readable (10)\n"
"  --window-kb N        bytes of unacknowledged frames kept for resending (16384)\n"
"  --window-frames N    frames kept for resending (65536)\n"
"  --ack-ms N           ask a host of protocol 1.5 for at most an ACK every N ms\n"
"                       while the window is less than an eighth full (an ACK is an\n"
"                       interrupt and a read here); 0: an ACK after every commit (50)\n"
"  --hold-when-full     stop reading the ring buffers while unacknowledged frames\n"
"                       fill the window but a reserve (a quarter, or the next\n"
"                       kallsyms), instead of dropping the window's oldest\n"
"                       frames (the default)\n"
"  --frame-checksum C   auto: XXH64 over payloads when the host checks it (1.4),\n"
"                       CRC32C otherwise; crc32c: always CRC32C (auto)\n"
"  --stats-ms N         STATS interval (10000)\n"
"  --rescan-ms N        new events, module changes, LOST, delta file (1000)\n"
"  --reconnect-ms N     host reconnection probe interval (500)\n"
"  --hello-ms N         resend HELLO when no WELCOME came (3000)\n"
"  --linger-ms N        on SIGTERM, wait this long for BYE to be ACKed (3000)\n"
"Tracing setup (default: leave tracefs as it is):\n"
"  --events LIST        enable events, e.g. kmem:kmalloc,kmem:kfree\n"
"  --tracer NAME        set current_tracer (it cannot change while the agent runs)\n"
"  --stacktrace         set options/stacktrace\n"
"  --stackmap           set options/stackmap\n"
"  --buffer-kb N        set buffer_size_kb\n"
"  --exclude-self       do not trace the agent's own syscalls (set_event_notrace_pid)\n"
"Test hooks (force one order of a window overflow; not for production):\n"
"  --test-hold-drops N  once the window has dropped N frames, stop reading the ring\n"
"                       buffers (tracing goes on; its overruns are reported in LOST)\n"
"                       until the host has every frame held; once per run\n"
"  --test-stall WHERE   send no frame from the stream's first EPOCH on (WHERE\n"
"                       first-epoch) or after it (after-first-epoch) until the hold\n"
"                       of --test-hold-drops starts, as a host that stops reading\n"
"Other:\n"
"  -v, --verbose        log more (repeat for debug)\n"
"  -q, --quiet          log warnings and errors only\n"
"  -h, --help           this text\n");
}

static int parse_num(const char *arg, const char *name, unsigned long min,
		     unsigned long max, unsigned long *ret)
{
	uint64_t v;

	if (parse_u64(arg, &v) < 0 || v < min || v > max) {
		log_error("%s: '%s' is not a number in %lu..%lu", name, arg, min, max);
		return -EINVAL;
	}
	*ret = (unsigned long)v;
	return 0;
}

enum {
	OPT_PORT_NAME = 256, OPT_PORT, OPT_SYSFS, OPT_DEVDIR, OPT_PROCFS, OPT_TRACEFS,
	OPT_FLUSH, OPT_WKB, OPT_WFRAMES, OPT_STATS, OPT_RESCAN, OPT_RECONNECT, OPT_HELLO,
	OPT_LINGER, OPT_ACK, OPT_EVENTS, OPT_TRACER, OPT_STACKTRACE, OPT_STACKMAP, OPT_BUFFER, OPT_EXCLUDE_SELF,
	OPT_TEST_HOLD, OPT_TEST_STALL, OPT_HOLD_FULL, OPT_CHECKSUM,
};

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "port-name", required_argument, NULL, OPT_PORT_NAME },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "sysfs", required_argument, NULL, OPT_SYSFS },
		{ "devdir", required_argument, NULL, OPT_DEVDIR },
		{ "procfs", required_argument, NULL, OPT_PROCFS },
		{ "tracefs", required_argument, NULL, OPT_TRACEFS },
		{ "flush-ms", required_argument, NULL, OPT_FLUSH },
		{ "window-kb", required_argument, NULL, OPT_WKB },
		{ "window-frames", required_argument, NULL, OPT_WFRAMES },
		{ "stats-ms", required_argument, NULL, OPT_STATS },
		{ "rescan-ms", required_argument, NULL, OPT_RESCAN },
		{ "reconnect-ms", required_argument, NULL, OPT_RECONNECT },
		{ "hello-ms", required_argument, NULL, OPT_HELLO },
		{ "linger-ms", required_argument, NULL, OPT_LINGER },
		{ "ack-ms", required_argument, NULL, OPT_ACK },
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "tracer", required_argument, NULL, OPT_TRACER },
		{ "stacktrace", no_argument, NULL, OPT_STACKTRACE },
		{ "stackmap", no_argument, NULL, OPT_STACKMAP },
		{ "buffer-kb", required_argument, NULL, OPT_BUFFER },
		{ "exclude-self", no_argument, NULL, OPT_EXCLUDE_SELF },
		{ "hold-when-full", no_argument, NULL, OPT_HOLD_FULL },
		{ "frame-checksum", required_argument, NULL, OPT_CHECKSUM },
		{ "test-hold-drops", required_argument, NULL, OPT_TEST_HOLD },
		{ "test-stall", required_argument, NULL, OPT_TEST_STALL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	unsigned long v;
	int c;

	*o = (struct options){
		.port_name = DEFAULT_PORT_NAME,
		.sysfs = "/sys", .procfs = "/proc", .devdir = "/dev",
		.flush_ms = 10, .window_kb = 16384, .window_frames = 65536,
		.stats_ms = 10000, .rescan_ms = 1000, .reconnect_ms = 500,
		.hello_ms = 3000, .linger_ms = 3000, .ack_ms = 50,
	};
	while ((c = getopt_long(argc, argv, "vqh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PORT_NAME: o->port_name = optarg; break;
		case OPT_PORT: o->port_path = optarg; break;
		case OPT_SYSFS: o->sysfs = optarg; break;
		case OPT_DEVDIR: o->devdir = optarg; break;
		case OPT_PROCFS: o->procfs = optarg; break;
		case OPT_TRACEFS: o->tracefs = optarg; break;
#define NUM(opt, field, min, max)						\
		case opt:							\
			if (parse_num(optarg, "--" #field, min, max, &v) < 0)	\
				return -EINVAL;					\
			o->field = (__typeof__(o->field))v;		\
			break;
		NUM(OPT_FLUSH, flush_ms, 1, 60000)
		NUM(OPT_WKB, window_kb, 512, 4ul * 1024 * 1024)
		NUM(OPT_WFRAMES, window_frames, 16, 16ul * 1024 * 1024)
		NUM(OPT_STATS, stats_ms, 10, 3600000)
		NUM(OPT_RESCAN, rescan_ms, 10, 3600000)
		NUM(OPT_RECONNECT, reconnect_ms, 1, 600000)
		NUM(OPT_HELLO, hello_ms, 10, 600000)
		NUM(OPT_LINGER, linger_ms, 0, 600000)
		NUM(OPT_ACK, ack_ms, 0, SMP_ACK_MS_MAX)
		NUM(OPT_BUFFER, setup.buffer_kb, 1, 16ul * 1024 * 1024)
		NUM(OPT_TEST_HOLD, test_hold_drops, 1, 1ul << 40)
#undef NUM
		case OPT_TEST_STALL:
			if (strcmp(optarg, "first-epoch") == 0)
				o->test_stall = TEST_STALL_AT_EPOCH;
			else if (strcmp(optarg, "after-first-epoch") == 0)
				o->test_stall = TEST_STALL_AFTER_EPOCH;
			else {
				log_error("--test-stall: '%s' is neither first-epoch nor "
					  "after-first-epoch", optarg);
				return -EINVAL;
			}
			break;
		case OPT_EVENTS: o->setup.events = optarg; break;
		case OPT_TRACER: o->setup.tracer = optarg; break;
		case OPT_STACKTRACE: o->setup.stacktrace = true; break;
		case OPT_STACKMAP: o->setup.stackmap = true; break;
		case OPT_EXCLUDE_SELF: o->setup.exclude_self = true; break;
		case OPT_HOLD_FULL: o->hold_when_full = true; break;
		case OPT_CHECKSUM:
			if (strcmp(optarg, "auto") == 0)
				o->crc32c_only = false;
			else if (strcmp(optarg, "crc32c") == 0)
				o->crc32c_only = true;
			else {
				log_error("--frame-checksum: '%s' is neither auto nor crc32c",
					  optarg);
				return -EINVAL;
			}
			break;
		case 'v':
			log_set_level(log_get_level() < LOG_INFO ? LOG_INFO : LOG_DEBUG);
			break;
		case 'q': log_set_level(LOG_WARNING); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (o->test_stall && !o->test_hold_drops) {
		log_error("--test-stall needs --test-hold-drops (which ends the stall)");
		return -EINVAL;
	}
	return 1;
}

/* ---- connection life cycle ------------------------------------------------ */

static void on_host_connected(struct agent *a)
{
	(void)agent_build_hello(a);	/* the map's epoch may have moved */
	port_set_async(&a->port, false);
	sess_start(&a->sess);
	listen_start(&a->listen, now_ms());
	a->connected = true;
	a->t_reconnect = 0;
	a->t_hello = now_ms() + a->o.hello_ms;
	log_info("host connected on %s: HELLO", a->port.path);
}

static void on_host_gone(struct agent *a, const char *why, unsigned delay_ms)
{
	if (a->connected)
		log_info("host disconnected (%s): keeping up to %lu KiB for resending", why,
			 a->o.window_kb);
	sess_down(&a->sess);
	a->connected = false;
	a->t_hello = 0;
	if (a->port.kind == PORT_SOCKET)
		port_close(&a->port);
	else
		port_set_async(&a->port, true);	/* SIGIO when it comes back */
	a->t_reconnect = now_ms() + delay_ms;
}

static void try_connect(struct agent *a)
{
	int r;

	a->t_reconnect = now_ms() + a->o.reconnect_ms;
	if (!a->have_port) {
		char path[4096];

		if (a->o.port_path) {
			strncpy(path, a->o.port_path, sizeof(path) - 1);
			path[sizeof(path) - 1] = '\0';
		} else {
			r = port_find(a->o.sysfs, a->o.devdir, a->o.port_name, path,
				      sizeof(path));
			if (r < 0) {
				log_once(LOG_WARNING, "no virtio-serial port named '%s' yet: "
					 "tracing continues into the window", a->o.port_name);
				return;
			}
		}
		r = port_init(&a->port, path);
		if (r < 0) {
			log_once(LOG_WARNING, "port %s: %s (retrying)", path, strerror(-r));
			return;
		}
		a->have_port = true;
		log_info("port %s (%s)", a->port.path,
			 a->port.kind == PORT_SOCKET ? "unix socket" : "device");
	}
	r = port_open(&a->port);
	if (r < 0) {
		log_once(LOG_NOTICE, "cannot open %s: %s (retrying every %u ms)", a->port.path,
			 strerror(-r), a->o.reconnect_ms);
		return;
	}
	if (port_host_connected(&a->port))
		on_host_connected(a);
	else
		port_set_async(&a->port, true);
}

static void handle_actions(struct agent *a, int act)
{
	if (act & SESS_ACT_CLOSE) {
		on_host_gone(a, "protocol version mismatch", SESS_CLOSE_BACKOFF_MS);
		return;
	}
	if (act & SESS_ACT_FRESH) {
		(void)agent_fresh_stream(a);
		if (a->port.kind == PORT_SOCKET) {
			/* the host closes a connection whose stream changes */
			on_host_gone(a, "fresh stream", 0);
			try_connect(a);
		} else {
			sess_start(&a->sess);
			a->t_hello = now_ms() + a->o.hello_ms;
		}
		return;
	}
	if (act & SESS_ACT_REHELLO) {
		if (a->sess.state == SESS_HELLO && !(act & SESS_ACT_WELCOME))
			return;		/* a HELLO is already on its way */
		sess_start(&a->sess);
		a->t_hello = now_ms() + a->o.hello_ms;
		return;
	}
	if (act & SESS_ACT_WELCOME) {
		a->t_hello = 0;	/* a gap at the resume point: see write_port() */
		a->t_ack_read = 0;	/* the session's first ACK comes at once */
		agent_announce_arena(a, false);
	}
}

/* @t_ns: CLOCK_MONOTONIC just read by the caller, or 0 (see latency_acked()) */
static void read_port(struct agent *a, uint64_t t_ns)
{
	uint8_t buf[4096];

	for (int i = 0; i < 16 && a->connected; i++) {
		ssize_t n = port_read(&a->port, buf, sizeof(buf));
		uint64_t probes = a->sess.time_probes, acks;
		struct win_stats ws;
		int act;

		a->c.port_reads++;
		if (n == -EAGAIN) {
			a->c.port_empty_reads++;
			return;
		}
		if (n == 0) {
			on_host_gone(a, "end of stream", a->o.reconnect_ms);
			return;
		}
		if (n < 0) {
			on_host_gone(a, strerror((int)-n), a->o.reconnect_ms);
			return;
		}
		acks = a->sess.acks;
		act = sess_input(&a->sess, buf, (size_t)n);
		if (a->sess.time_probes != probes)
			listen_probe(&a->listen, now_ms());
		win_get_stats(a->win, &ws);
		if (a->sess.acks != acks) {
			a->t_ack_read = t_ns ? t_ns / 1000000u : now_ms();
			a->resent_at_ack = ws.resent_frames;
		}
		latency_acked(&a->lat, ws.acked, t_ns);	/* ACKed pages are durable now */
		if (act)
			handle_actions(a, act);
		/* a short read took what was there: poll says when more comes, no read
		 * just to fail with EAGAIN */
		if ((size_t)n < sizeof(buf))
			return;
	}
}

static void write_port(struct agent *a)
{
	int r;

	if (!a->connected)
		return;
	r = sess_flush(&a->sess, port_write, &a->port);
	if (r == SESS_FLUSH_GAP) {
		/* frames the host lacks left the window (it was away, or slower than us) */
		if (agent_after_gap(a, win_gap_from(a->win)) < 0) {
			handle_actions(a, SESS_ACT_FRESH);
			return;
		}
		r = sess_flush(&a->sess, port_write, &a->port);
	}
	if (r == 0 || r == -EAGAIN)
		return;
	if (r == -ENODEV) {
		log_error("port %s was unplugged", a->port.path);
		port_close(&a->port);
		a->have_port = false;
	}
	on_host_gone(a, strerror(-r), a->o.reconnect_ms);
}

/* ---- the loop -------------------------------------------------------------- */

static void begin_stop(struct agent *a, const char *why)
{
	uint8_t bye[8];
	long n = smp_bye_encode(SMP_BYE_SHUTDOWN, bye, sizeof(bye));
	int64_t seq;

	log_info("%s: sending BYE", why);
	a->stopping = true;
	agent_collect(a);
	agent_send_cmdlines(a, a->win, false);	/* the tasks of the last events drained */
	agent_queue_lost(a, true);
	agent_queue_stats(a, true);
	seq = n > 0 ? win_append(a->win, SMP_BYE, bye, (uint32_t)n) : -EINVAL;
	a->bye_seq = seq > 0 ? (uint64_t)seq : 0;
	a->t_linger = now_ms() + a->o.linger_ms;
	a->t_gather = 0;
}

static bool bye_done(struct agent *a)
{
	struct win_stats ws;

	win_get_stats(a->win, &ws);
	return a->bye_seq && ws.acked >= a->bye_seq;
}

static int setup_signals(void)
{
	sigset_t mask;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGIO);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return negerrno();
	fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	return fd < 0 ? negerrno() : fd;
}

/* Returns 1 to go on, 0 to exit. */
static int read_signals(struct agent *a, int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			if (a->stopping) {
				log_warning("second %s: exiting without waiting for the ACK of BYE",
					    si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
				return 0;
			}
			begin_stop(a, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		case SIGIO:
			/* the host side of the virtio port changed */
			if (a->have_port && !a->connected)
				a->t_reconnect = now_ms();
			break;
		case SIGHUP:
			a->t_rescan = now_ms();
			break;
		}
	}
	return 1;
}

static void arm_min(uint64_t *deadline, uint64_t t)
{
	if (t && (!*deadline || t < *deadline))
		*deadline = t;
}

/*
 * How long after the rings became readable they are read: late enough that each read
 * takes what a busy CPU committed in most of the flush bound (fewer, fuller pages;
 * fewer syscalls and frames), early enough that reading, framing and the port write
 * fit in the rest of it (a fifth, at least 1 ms).
 */
static unsigned gather_delay_ms(unsigned flush_ms)
{
	unsigned slack = flush_ms / 5 ? flush_ms / 5 : 1;

	return flush_ms > slack ? flush_ms - slack : 1;
}

/*
 * Whether a collection round reads the port: whether an ACK may be waiting there
 * (TIME, the other input worth a read in a round, gets a wake-up of its own while it
 * is due: listen.h). A host of protocol 1.5 that got --ack-ms (PROTOCOL.md 4.1) sends
 * the first ACK of a session at once, then holds each next one back until ack_ms have
 * passed since the last, unless ack_bytes wait for one or a resent frame was a
 * duplicate. So after an ACK was read, the port has nothing for the rounds of the
 * next ack_ms less two rounds (the ACK read was sent up to a round before, and the
 * next one may come up to a round before its round): most rounds then leave out a
 * read that would only fail with EAGAIN. An ACK that comes earlier all the same (a
 * host that paces otherwise) is read at most ack_ms later, by a round or a poll.
 * Anything else (no pacing, a 1.4 host, a session not UP, an eighth of ack_bytes
 * waiting, frames resent since that ACK): every round reads the port, as before.
 */
static bool ack_may_be_there(struct agent *a, uint64_t now, unsigned gather_ms)
{
	struct win_stats ws;

	if (a->sess.state != SESS_UP || !a->o.ack_ms ||
	    a->sess.host_minor < SMP_MINOR_ACK_PACING || !a->t_ack_read ||
	    now + 2 * gather_ms >= a->t_ack_read + a->o.ack_ms)
		return true;
	win_get_stats(a->win, &ws);
	return ws.bytes >= agent_ack_bytes(a) / 8 || ws.resent_frames != a->resent_at_ack;
}

static int run(struct agent *a, int sfd)
{
	uint64_t now = now_ms();
	unsigned gather_ms = gather_delay_ms(a->o.flush_ms);

	a->t_rescan = now + a->o.rescan_ms;
	a->t_stats = now + a->o.stats_ms;
	a->t_reconnect = now;
	for (;;) {
		struct pollfd pfd[2 + SMP_MAX_CPUS];
		uint32_t ring_idx[SMP_MAX_CPUS];
		uint64_t deadline = 0;
		unsigned nfd = 0, nring = 0;
		int port_slot = -1, timeout, r;
		bool hold = agent_holding(a), want_input = true;
		uint64_t t_ns = now_ns();

		now = t_ns / 1000000u;
		/* after BYE nothing more is framed: BYE is the stream's last frame */
		if (a->t_gather && now >= a->t_gather && !a->stopping) {
			/*
			 * While the rings have data, read them on this timer alone: what is
			 * committed after this read is read at the next, within the flush
			 * bound, with no poll of the wake-up file (and no kernel wake-up of
			 * the agent) per round. A round that finds nothing goes back to
			 * waiting for the wake-up.
			 */
			a->c.rounds++;
			/* ACKs, TIME: no wake-up of their own */
			if (a->connected && ack_may_be_there(a, now, gather_ms))
				read_port(a, t_ns);
			a->t_gather = agent_collect(a) && !agent_holding(a) ?
				      now_ms() + gather_ms : 0;
		}
		if (now >= a->t_rescan && !a->stopping) {
			a->t_rescan = now + a->o.rescan_ms;
			if (!hold)
				agent_rescan(a);
		}
		if (now >= a->t_stats && !a->stopping) {
			a->t_stats = now + a->o.stats_ms;
			if (!hold)
				agent_queue_stats(a, false);
		}
		if (!a->connected && a->t_reconnect && now >= a->t_reconnect)
			try_connect(a);
		if (a->connected && a->sess.state == SESS_HELLO && a->t_hello &&
		    now >= a->t_hello) {
			log_notice("no WELCOME within %u ms: resending HELLO", a->o.hello_ms);
			sess_start(&a->sess);
			a->t_hello = now + a->o.hello_ms;
		}
		write_port(a);
		if (a->stopping && (bye_done(a) || now >= a->t_linger)) {
			if (!bye_done(a))
				log_warning("BYE was not acknowledged within %u ms", a->o.linger_ms);
			return 0;
		}

		pfd[nfd++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (a->connected) {
			/*
			 * While the rings are read on the timer, the collection round reads
			 * the port too: no wake-up per ACK, only for a clock probe that is
			 * due (listen.h). A hang-up is reported whatever is asked for.
			 */
			want_input = !a->t_gather || a->stopping || a->sess.state != SESS_UP ||
				 listen_due(&a->listen, now);
			port_slot = (int)nfd;
			pfd[nfd++] = (struct pollfd){
				.fd = a->port.fd,
				.events = (want_input ? POLLIN : 0) |
					  (sess_want_write(&a->sess) ? POLLOUT : 0),
			};
		}
		if (!a->t_gather && !a->stopping && !hold) {
			if (a->rings->wake_fd >= 0) {
				ring_idx[nring++] = UINT32_MAX;
				pfd[nfd++] = (struct pollfd){ .fd = a->rings->wake_fd,
							      .events = POLLIN };
			} else {
				for (uint32_t i = 0; i < a->rings->count; i++) {
					ring_idx[nring++] = i;
					pfd[nfd++] = (struct pollfd){
						.fd = a->rings->cpus[i].fd, .events = POLLIN };
				}
			}
		}

		if (!a->stopping) {
			arm_min(&deadline, a->t_gather);
			arm_min(&deadline, a->t_rescan);
			arm_min(&deadline, a->t_stats);
		}
		if (!a->connected)
			arm_min(&deadline, a->t_reconnect);
		if (a->connected && a->sess.state == SESS_HELLO)
			arm_min(&deadline, a->t_hello);
		if (a->stopping)
			arm_min(&deadline, a->t_linger);
		now = now_ms();
		timeout = !deadline ? -1 : deadline <= now ? 0 : (int)MIN(deadline - now, 60000u);

		r = poll(pfd, nfd, timeout);
		a->c.wakeups++;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_error("poll: %s", strerror(errno));
			return -errno;
		}
		if (pfd[0].revents & POLLIN) {
			if (!read_signals(a, sfd))
				return 0;
		}
		if (port_slot >= 0 && a->connected) {
			short ev = pfd[port_slot].revents;

			/* unasked, input under a hang-up is read before it is handled */
			if ((ev & POLLIN) ||
			    (!want_input && (ev & (POLLHUP | POLLERR))))
				read_port(a, 0);
			if (a->connected && (ev & (POLLHUP | POLLERR | POLLNVAL)) &&
			    !(ev & POLLIN))
				on_host_gone(a, ev & POLLHUP ? "hang-up" : "port error",
					     a->o.reconnect_ms);
		}
		for (unsigned i = 0; i < nring; i++) {
			short ev = pfd[nfd - nring + i].revents;

			if (ev & POLLIN) {
				if (!a->t_gather)
					a->t_gather = now_ms() + gather_ms;
			} else if ((ev & POLLHUP) && ring_idx[i] != UINT32_MAX) {
				/* a FIFO without a writer (fake trees): read on the timers */
				if (!a->t_gather)
					a->t_gather = now_ms() + a->o.rescan_ms;
			}
		}
	}
}

int main(int argc, char **argv)
{
	_cleanup_close_ int sfd = -1;
	struct agent a = { 0 };
	int r;

	r = parse_args(argc, argv, &a.o);
	if (r <= 0)
		return r < 0 ? 2 : 0;
	a.port.fd = -1;
	a.delta.fd = -1;
	a.marker_fd = -1;
	sfd = setup_signals();
	if (sfd < 0) {
		log_error("signals: %s", strerror(-sfd));
		return 1;
	}
	r = agent_setup(&a);
	if (r < 0) {
		agent_free(&a);
		return 1;
	}
	log_info("setup took %" PRIu64 " ms of CPU", cpu_time_ns() / 1000000);
	r = run(&a, sfd);
	{
		uint64_t caught_up = 0, ring_reads = 0, ring_empty = 0;
		struct win_stats ws;

		for (uint32_t i = 0; a.rings && i < a.rings->count; i++) {
			caught_up += a.rings->cpus[i].caught_up_pages;
			ring_reads += a.rings->cpus[i].reads;
			ring_empty += a.rings->cpus[i].empty_reads;
		}
		win_get_stats(a.win, &ws);
		log_info("exiting: %" PRIu64 " pages, %" PRIu64 " stack records, %" PRIu64
			 " epoch records, %" PRIu64 " frames dropped, %" PRIu64 " resent, "
			 "%" PRIu64 " holds on a full window, "
			 "%" PRIu64 " bytes in %" PRIu64 " writes, %" PRIu64 " ms of CPU, "
			 "%" PRIu64 " time probes answered, %" PRIu64 " wake-ups for %"
			 PRIu64 " collection rounds, %" PRIu64 " pages read up to the writer; "
			 "reads (of them empty): port %" PRIu64 " (%" PRIu64 "), rings %"
			 PRIu64 " (%" PRIu64 "), stack deltas %" PRIu64 " (%" PRIu64 ")",
			 a.c.pages, a.c.stacks, a.c.epochs, ws.dropped_frames,
			 ws.resent_frames, a.c.window_full_holds, a.sess.out.bytes, a.sess.out.writes,
			 cpu_time_ns() / 1000000, a.sess.time_probes, a.c.wakeups, a.c.rounds,
			 caught_up, a.c.port_reads, a.c.port_empty_reads, ring_reads,
			 ring_empty, a.delta.reads, a.delta.empty_reads);
	}
	agent_free(&a);
	return r < 0 ? 1 : 0;
}
