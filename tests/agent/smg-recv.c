// SPDX-License-Identifier: MIT
/*
 * smg-recv.c - a minimal host-side receiver of the stackmap wire protocol, built on
 * proto/ only, for end-to-end runs of stackmap-guestd (a QEMU -chardev socket, or the
 * agent's --port on a unix socket). It plays the host agent's part of PROTOCOL.md
 * section 3 without storing anything: WELCOME from the next sequence number it expects
 * per stream, frames applied in order (duplicates dropped, gaps counted), every payload
 * validated with proto/'s decoders and PAGE data checked against its page header, an
 * ACK after every read. It can drop the connection after N bytes and come back, to
 * exercise the agent's resending.
 *
 * Usage: smg-recv (--connect PATH | --listen PATH) [--disconnect-after BYTES]
 *                 [--away-ms N] [--until-bye] [--timeout-s N] [--raw-bytes N]
 * (--raw-bytes N: just count N bytes, e.g. of a dd to the port, and report the time)
 * Prints one summary line per counter at the end; exits 0 when the stream was clean
 * (no decode error, no malformed payload, no gap, BYE seen with --until-bye).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

#define MAX_CPUS 256

struct recv_state {
	uint64_t stream_id;
	uint64_t expected;
	unsigned streams, hellos, connections;
	uint64_t frames[256];
	uint64_t bytes;
	uint64_t pages_cpu[MAX_CPUS];
	uint64_t page_bytes;
	uint64_t page_errors, missed_pages;
	uint64_t events;	/* data records in the pages (ring-buffer event headers) */
	uint64_t stacks, epochs, last_epoch;
	uint64_t decode_errors, malformed, dups, gaps, resent;
	uint64_t lost_dropped_frames;
	struct smp_lost_cpu lost_cpu[MAX_CPUS];
	uint32_t lost_nr;
	uint64_t stat[32];
	bool byes;
	uint32_t page_size;
	uint64_t first_byte_ms, last_byte_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void send_frame(int fd, uint8_t type, const void *p, size_t len)
{
	uint8_t buf[128];
	long n = smp_frame_encode(buf, sizeof(buf), type, 0, 0, p, len);

	if (n > 0)
		(void)send(fd, buf, (size_t)n, MSG_NOSIGNAL);
}

/*
 * Count the data records of a page's committed bytes, walking the ring buffer's event
 * headers (type_len in bits 0-4: 0 = length in the next word, 1..28 = 4*type_len bytes
 * of data, 29 padding, 30 time extend, 31 absolute time stamp). Returns -1 when a
 * header points outside the data.
 */
static long count_events(const uint8_t *data, size_t len)
{
	size_t off = 0;
	long n = 0;

	while (off + 4 <= len) {
		uint32_t h, type_len, word = 0;
		size_t size;

		memcpy(&h, data + off, 4);
		type_len = h & 0x1f;
		if (off + 8 <= len)
			memcpy(&word, data + off + 4, 4);
		if (type_len == 29) {
			if ((h >> 5) == 0 && word == 0)
				break;		/* the null event: nothing after it */
			size = 4 + (size_t)word;
		} else if (type_len >= 30) {
			size = 8;
		} else if (type_len == 0) {
			size = 4 + (((size_t)word + 3) & ~(size_t)3);
			n++;
		} else {
			size = 4 + 4 * (size_t)type_len;
			n++;
		}
		if (size < 4 || off + size > len)
			return -1;
		off += size;
	}
	return n;
}

static void check_page(struct recv_state *s, const struct smp_frame *f)
{
	struct smp_page p;
	uint64_t commit_field;
	uint32_t commit;
	size_t want;

	if (smp_page_decode(&p, f->payload, f->len) < 0 || p.cpu >= MAX_CPUS) {
		s->malformed++;
		return;
	}
	/* 64-bit little-endian page header: timestamp, commit (flags in bits 30-31) */
	memcpy(&commit_field, p.data + 8, 8);
	commit = (uint32_t)commit_field & ~(3u << 30);
	want = 16 + (size_t)commit + ((commit_field & (1u << 30)) ? 8 : 0);
	if (p.data_len != want || p.data_len > s->page_size) {
		s->page_errors++;
	} else {
		long n = count_events(p.data + 16, commit);

		if (n < 0)
			s->page_errors++;
		else
			s->events += (uint64_t)n;
	}
	if (commit_field & (1u << 31))
		s->missed_pages++;
	s->pages_cpu[p.cpu]++;
	s->page_bytes += p.data_len;
}

static void apply(struct recv_state *s, const struct smp_frame *f)
{
	struct smp_delta_rec r;
	struct smp_lost lost;
	struct smp_text t;
	struct smp_format fm;
	uint32_t nr, reason;
	size_t off = 0;
	int k;

	s->frames[f->type]++;
	switch (f->type) {
	case SMP_PAGE:
		check_page(s, f);
		break;
	case SMP_STACKS:
		while ((k = smp_delta_next(f->payload, f->len, &off, &r)) == 1) {
			if (r.kind != SMP_DELTA_STACK)
				s->malformed++;
			s->stacks++;
		}
		if (k < 0)
			s->malformed++;
		break;
	case SMP_EPOCH:
		if (smp_delta_next(f->payload, f->len, &off, &r) != 1 ||
		    r.kind != SMP_DELTA_EPOCH || off != f->len)
			s->malformed++;
		s->epochs++;
		s->last_epoch = r.epoch;
		break;
	case SMP_FORMAT:
		if (smp_format_decode(&fm, f->payload, f->len) < 0)
			s->malformed++;
		break;
	case SMP_KSYMS:
	case SMP_MODULES:
	case SMP_CMDLINES:
		if (smp_text_decode(&t, f->payload, f->len) < 0)
			s->malformed++;
		break;
	case SMP_LOST:
		if (smp_lost_decode(&lost, f->payload, f->len) < 0) {
			s->malformed++;
			break;
		}
		s->lost_dropped_frames = lost.agent_dropped_frames;
		s->lost_nr = lost.nr < MAX_CPUS ? lost.nr : MAX_CPUS;
		for (uint32_t i = 0; i < s->lost_nr; i++)
			smp_lost_cpu(&lost, i, &s->lost_cpu[i]);
		break;
	case SMP_STATS:
		if (smp_stats_decode(&nr, f->payload, f->len) < 0) {
			s->malformed++;
			break;
		}
		for (uint32_t i = 0; i < nr; i++) {
			struct smp_stat st;

			smp_stats_get(f->payload, i, &st);
			if (st.key < 32)
				s->stat[st.key] = st.value;
		}
		break;
	case SMP_BYE:
		if (smp_bye_decode(&reason, f->payload, f->len) < 0)
			s->malformed++;
		s->byes = true;
		break;
	default:
		break;
	}
}

static void on_frame(struct recv_state *s, int fd, const struct smp_frame *f)
{
	if (f->type == SMP_HELLO) {
		struct smp_hello h;
		struct smp_welcome w = { .max_payload = SMP_MAX_PAYLOAD };
		uint8_t p[16];

		if (smp_hello_decode(&h, f->payload, f->len) < 0) {
			s->malformed++;
			return;
		}
		s->hellos++;
		if (h.stream_id != s->stream_id) {
			s->stream_id = h.stream_id;
			s->expected = 1;
			s->streams++;
			s->page_size = h.page_size;
			printf("hello: stream %016" PRIx64 " release %.*s cpus %" PRIu32
			       " page %" PRIu32 " clock %.*s build_id_len %u text %#" PRIx64
			       " map_bits %" PRIu32 "\n", h.stream_id, h.release_len, h.release,
			       h.nr_cpus, h.page_size, h.clock_len, h.trace_clock, h.build_id_len,
			       h.text_addr, h.map_bits);
			fflush(stdout);
		}
		w.resume_seq = s->expected;
		smp_welcome_encode(&w, p, sizeof(p));
		send_frame(fd, SMP_WELCOME, p, 16);
		return;
	}
	if (f->type == SMP_ARENA && f->seq == 0) {
		/* the window's pages, for a post-mortem: nothing to apply here */
		struct smp_arena m;

		if (smp_arena_decode(&m, f->payload, f->len) < 0)
			s->malformed++;
		return;
	}
	if (smp_msg_check_size(f->type, f->len) == -EBADMSG) {
		s->malformed++;
		return;
	}
	if (f->flags & SMP_FLAG_RESENT)
		s->resent++;
	if (f->seq < s->expected) {
		s->dups++;
		return;
	}
	if (f->seq > s->expected) {
		s->gaps += f->seq - s->expected;
		s->expected = f->seq;
	}
	apply(s, f);
	s->expected++;
}

static int open_conn(const char *path, bool listen_mode, int *lfd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	if (listen_mode) {
		if (*lfd < 0) {
			*lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			unlink(path);
			if (*lfd < 0 || bind(*lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
			    listen(*lfd, 1) < 0)
				return -errno;
		}
		fd = accept4(*lfd, NULL, NULL, SOCK_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "disconnect-after", required_argument, NULL, 'd' },
		{ "away-ms", required_argument, NULL, 'a' },
		{ "until-bye", no_argument, NULL, 'b' },
		{ "timeout-s", required_argument, NULL, 't' },
		{ "raw-bytes", required_argument, NULL, 'r' },
		{ 0 }
	};
	static struct recv_state s;
	const char *path = NULL;
	bool listen_mode = false, until_bye = false;
	unsigned long long disconnect_after = 0, away_ms = 1000, timeout_s = 60;
	unsigned long long raw_bytes = 0;	/* count this many bytes, decode nothing */
	struct smp_decoder *dec = smp_decoder_new(0);
	uint64_t end, conn_bytes = 0;
	int c, fd = -1, lfd = -1;
	bool clean;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': path = optarg; break;
		case 'l': path = optarg; listen_mode = true; break;
		case 'd': disconnect_after = strtoull(optarg, NULL, 0); break;
		case 'a': away_ms = strtoull(optarg, NULL, 0); break;
		case 'b': until_bye = true; break;
		case 't': timeout_s = strtoull(optarg, NULL, 0); break;
		case 'r': raw_bytes = strtoull(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (!path || !dec) {
		fprintf(stderr, "usage: smg-recv (--connect PATH | --listen PATH) "
			"[--disconnect-after BYTES] [--away-ms N] [--until-bye] [--timeout-s N]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	s.page_size = SMP_PAGE_SIZE_MAX;
	end = now_ms() + timeout_s * 1000;
	while (now_ms() < end && !(until_bye && s.byes)) {
		uint8_t buf[65536];
		struct pollfd p;
		ssize_t n;

		if (fd < 0) {
			fd = open_conn(path, listen_mode, &lfd);
			if (fd < 0) {
				struct timespec ts = { 0, 20000000 };

				nanosleep(&ts, NULL);
				continue;
			}
			s.connections++;
			conn_bytes = 0;
			smp_decoder_reset(dec);
		}
		p = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 200) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			close(fd);
			fd = -1;
			continue;
		}
		if (!s.first_byte_ms)
			s.first_byte_ms = now_ms();
		s.last_byte_ms = now_ms();
		s.bytes += (uint64_t)n;
		conn_bytes += (uint64_t)n;
		if (raw_bytes) {
			if (s.bytes >= raw_bytes)
				break;
			continue;
		}
		for (size_t off = 0; off < (size_t)n;) {
			struct smp_frame f;
			int k;

			off += smp_decoder_feed(dec, buf + off, (size_t)n - off);
			while ((k = smp_decoder_next(dec, &f, NULL)) != 0) {
				if (k < 0) {
					s.decode_errors++;
					if (k == -EPROTONOSUPPORT)
						break;
					continue;
				}
				on_frame(&s, fd, &f);
			}
		}
		if (disconnect_after && conn_bytes >= disconnect_after) {
			struct timespec ts = { (time_t)(away_ms / 1000),
					       (long)(away_ms % 1000) * 1000000L };

			printf("disconnecting after %" PRIu64 " bytes, away %llu ms\n",
			       conn_bytes, away_ms);
			fflush(stdout);
			disconnect_after = 0;
			close(fd);
			fd = -1;
			nanosleep(&ts, NULL);
			continue;
		}
		if (s.expected > 1) {
			uint8_t a[8];

			smp_ack_encode(s.expected - 1, a, sizeof(a));
			send_frame(fd, SMP_ACK, a, 8);
		}
	}
	printf("connections %u hellos %u streams %u\n", s.connections, s.hellos, s.streams);
	printf("bytes %" PRIu64 " in %" PRIu64 " ms\n", s.bytes,
	       s.last_byte_ms - s.first_byte_ms);
	for (int t = 1; t < 256; t++)
		if (s.frames[t])
			printf("frames %s %" PRIu64 "\n", smp_type_name((uint8_t)t)
			       ? smp_type_name((uint8_t)t) : "?", s.frames[t]);
	for (int cpu = 0; cpu < MAX_CPUS; cpu++)
		if (s.pages_cpu[cpu])
			printf("pages cpu%d %" PRIu64 "\n", cpu, s.pages_cpu[cpu]);
	printf("page_bytes %" PRIu64 " page_errors %" PRIu64 " missed_pages %" PRIu64
	       " events %" PRIu64 "\n", s.page_bytes, s.page_errors, s.missed_pages, s.events);
	printf("stacks %" PRIu64 " epochs %" PRIu64 "\n", s.stacks, s.epochs);
	printf("decode_errors %" PRIu64 " malformed %" PRIu64 " dups %" PRIu64 " gaps %"
	       PRIu64 " resent %" PRIu64 "\n", s.decode_errors, s.malformed, s.dups, s.gaps,
	       s.resent);
	printf("lost agent_dropped_frames %" PRIu64 "\n", s.lost_dropped_frames);
	for (uint32_t i = 0; i < s.lost_nr; i++)
		printf("lost cpu%" PRIu32 " overrun %" PRIu64 " commit_overrun %" PRIu64
		       " dropped %" PRIu64 " read %" PRIu64 "\n", s.lost_cpu[i].cpu,
		       s.lost_cpu[i].overrun, s.lost_cpu[i].commit_overrun,
		       s.lost_cpu[i].dropped_events, s.lost_cpu[i].read_events);
	printf("stats agent_frames %" PRIu64 " agent_bytes %" PRIu64 " agent_writes %" PRIu64
	       " agent_resent %" PRIu64 " agent_cpu_ns %" PRIu64 "\n",
	       s.stat[SMP_STAT_AGENT_FRAMES], s.stat[SMP_STAT_AGENT_BYTES],
	       s.stat[SMP_STAT_AGENT_WRITES], s.stat[SMP_STAT_AGENT_RESENT],
	       s.stat[SMP_STAT_AGENT_CPU_NS]);
	printf("bye %s\n", s.byes ? "yes" : "no");
	if (raw_bytes) {
		printf("raw %" PRIu64 " bytes in %" PRIu64 " ms\n", s.bytes,
		       s.last_byte_ms - s.first_byte_ms);
		return s.bytes >= raw_bytes ? 0 : 1;
	}
	clean = !s.decode_errors && !s.malformed && !s.gaps && !s.page_errors &&
		(!until_bye || s.byes);
	printf("result %s\n", clean ? "clean" : "NOT CLEAN");
	smp_decoder_free(dec);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0) {
		close(lfd);
		if (listen_mode)
			unlink(path);
	}
	return clean ? 0 : 1;
}
