// SPDX-License-Identifier: MIT
/*
 * smdelta - in-guest helper of the stack_map_delta e2e tests (static binary).
 *
 *   smdelta read OUT STOPFILE     copy every record read from stack_map_delta to
 *                                 OUT until STOPFILE exists and a read finds
 *                                 nothing new; checks each read returns whole
 *                                 records (proto/ smp_delta_next)
 *   smdelta pipe OUT STOPFILE     read trace_pipe the same way, write one
 *                                 (u64 ts_ns, u32 stack_id, u32 0) per
 *                                 "<stack_id N>" line to OUT
 *   smdelta check DELTA PIPE      exactly-once check: every delta entry once per
 *                                 epoch, epoch records in sequence, every id of
 *                                 PIPE delivered for the epoch it belongs to
 *                                 (PROTOCOL.md 6.1: the most recent epoch with its
 *                                 tag that began at or before the event)
 *   smdelta drain                 open stack_map_delta, read until a read finds
 *                                 nothing new, print the record count
 *
 * Prints "STACKMAP-E2E: ..." result lines; exit 0 when everything checked out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

#define TRACEFS "/sys/kernel/tracing/"
#define BUFSZ (256 * 1024)

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void die(const char *what)
{
	printf("STACKMAP-E2E: FAIL smdelta: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cmd_read(const char *out, const char *stop)
{
	static uint8_t buf[BUFSZ];
	unsigned long long bytes = 0, reads = 0, stacks = 0, epochs = 0;
	int fd = open(TRACEFS "stack_map_delta", O_RDONLY | O_NONBLOCK);
	int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		die("open stack_map_delta");
	if (ofd < 0)
		die(out);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EAGAIN) {
			if (access(stop, F_OK) == 0)
				break;
			msleep(2);
			continue;
		}
		if (n < 0)
			die("read stack_map_delta");
		if (n == 0) {
			printf("STACKMAP-E2E: FAIL smdelta: read returned 0 with O_NONBLOCK\n");
			return 1;
		}
		reads++;
		bytes += (unsigned long long)n;
		/* Every read returns whole records. */
		size_t off = 0;
		struct smp_delta_rec r;
		int rc;

		while ((rc = smp_delta_next(buf, (size_t)n, &off, &r)) == 1) {
			if (r.kind == SMP_DELTA_EPOCH)
				epochs++;
			else
				stacks++;
		}
		if (rc < 0 || off != (size_t)n) {
			printf("STACKMAP-E2E: FAIL smdelta: read of %zd bytes is not whole records (at %zu)\n",
			       n, off);
			return 1;
		}
		if (write_all(ofd, buf, (size_t)n))
			die(out);
	}
	close(fd);
	close(ofd);
	printf("STACKMAP-E2E: DELTA-READER reads=%llu bytes=%llu stack_records=%llu epoch_records=%llu\n",
	       reads, bytes, stacks, epochs);
	return 0;
}

/* "   <idle>-0     [001] d..2.   123.456789: <stack_id 1048583>" */
static int parse_line(const char *l, uint64_t *ts, uint32_t *id)
{
	const char *p = strstr(l, ": <stack_id ");
	const char *q;
	unsigned long long sec = 0, usec = 0, mul = 1;

	if (!p)
		return 0;
	*id = (uint32_t)strtoul(p + 12, NULL, 10);
	/* back over "SSS.UUUUUU" before ": " */
	q = p - 1;
	while (q > l && *q >= '0' && *q <= '9') {
		usec += (unsigned long long)(*q - '0') * mul;
		mul *= 10;
		q--;
	}
	if (q <= l || *q != '.')
		return 0;
	q--;
	mul = 1;
	while (q >= l && *q >= '0' && *q <= '9') {
		sec += (unsigned long long)(*q - '0') * mul;
		mul *= 10;
		q--;
	}
	*ts = sec * 1000000000ULL + usec * 1000ULL;
	return 1;
}

static int cmd_pipe(const char *out, const char *stop)
{
	static char buf[BUFSZ + 1];
	size_t have = 0;
	unsigned long long ids = 0, lines = 0;
	int fd = open(TRACEFS "trace_pipe", O_RDONLY | O_NONBLOCK);
	int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int idle = 0;

	if (fd < 0)
		die("open trace_pipe");
	if (ofd < 0)
		die(out);
	for (;;) {
		ssize_t n = read(fd, buf + have, BUFSZ - have);

		if (n < 0 && errno == EAGAIN) {
			/* Stopped and drained: several empty polls in a row. */
			if (access(stop, F_OK) == 0 && ++idle > 50)
				break;
			msleep(5);
			continue;
		}
		if (n < 0)
			die("read trace_pipe");
		idle = 0;
		have += (size_t)n;
		buf[have] = 0;
		char *s = buf, *nl;

		while ((nl = strchr(s, '\n'))) {
			uint64_t ts;
			uint32_t id;

			*nl = 0;
			lines++;
			if (parse_line(s, &ts, &id)) {
				uint32_t rec[4] = { (uint32_t)ts, (uint32_t)(ts >> 32), id, 0 };

				if (write_all(ofd, rec, sizeof(rec)))
					die(out);
				ids++;
			}
			s = nl + 1;
		}
		have = (size_t)(buf + have - s);
		memmove(buf, s, have);
		if (have == BUFSZ)
			have = 0;	/* an absurd line: drop it */
	}
	close(fd);
	close(ofd);
	printf("STACKMAP-E2E: PIPE-READER lines=%llu stack_id_events=%llu\n", lines, ids);
	return 0;
}

/* --- check --------------------------------------------------------------- */

struct set {
	uint64_t *k;
	size_t cap, n;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* Insert key+1; return 1 if new, 0 if present. */
static int set_add(struct set *s, uint64_t key)
{
	size_t i;

	key++;
	if (2 * (s->n + 1) > s->cap) {
		struct set t = { calloc(s->cap ? 2 * s->cap : 1024, 8),
				 s->cap ? 2 * s->cap : 1024, 0 };

		if (!t.k)
			die("calloc");
		for (i = 0; i < s->cap; i++)
			if (s->k[i])
				set_add(&t, s->k[i] - 1);
		free(s->k);
		*s = t;
	}
	for (i = mix(key) & (s->cap - 1); s->k[i]; i = (i + 1) & (s->cap - 1))
		if (s->k[i] == key)
			return 0;
	s->k[i] = key;
	s->n++;
	return 1;
}

static int set_has(const struct set *s, uint64_t key)
{
	size_t i;

	key++;
	if (!s->cap)
		return 0;
	for (i = mix(key) & (s->cap - 1); s->k[i]; i = (i + 1) & (s->cap - 1))
		if (s->k[i] == key)
			return 1;
	return 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	if (!f)
		die(path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
		die(path);
	fclose(f);
	*len = (size_t)n;
	return b;
}

struct epoch {
	uint64_t epoch, ts;
};

static int cmd_check(const char *dpath, const char *ppath)
{
	size_t dlen, plen, off = 0, nep = 0, capep = 0;
	uint8_t *d = slurp(dpath, &dlen), *p = slurp(ppath, &plen);
	struct epoch *ep = NULL;
	struct set delivered = { 0 }, seen = { 0 };
	unsigned long long stacks = 0, dups = 0, badtag = 0, gaps = 0, before = 0;
	unsigned long long ids = 0, unresolved = 0, older = 0;
	struct smp_delta_rec r;
	int rc, shown = 0;

	while ((rc = smp_delta_next(d, dlen, &off, &r)) == 1) {
		if (r.kind == SMP_DELTA_EPOCH) {
			if (nep && r.epoch != ep[nep - 1].epoch + 1)
				gaps++;
			if (nep == capep) {
				capep = capep ? 2 * capep : 1024;
				ep = realloc(ep, capep * sizeof(*ep));
				if (!ep)
					die("realloc");
			}
			ep[nep].epoch = r.epoch;
			ep[nep].ts = r.timestamp;
			nep++;
			continue;
		}
		if (!nep) {
			before++;
			continue;
		}
		stacks++;
		if (smp_id_tag(r.stack_id) != smp_epoch_tag(ep[nep - 1].epoch))
			badtag++;
		if (!set_add(&delivered, (ep[nep - 1].epoch << 32) | r.stack_id))
			dups++;
	}
	if (rc < 0) {
		printf("STACKMAP-E2E: FAIL delta file malformed at byte %zu\n", off);
		return 1;
	}

	for (size_t i = 0; i + 16 <= plen; i += 16) {
		uint32_t w[4];
		uint64_t ts, t_us;
		uint32_t id, tag;
		long lo = 0, hi = (long)nep - 1, k = -1;

		memcpy(w, p + i, 16);
		ts = w[0] | (uint64_t)w[1] << 32;
		id = w[2];
		tag = smp_id_tag(id);
		ids++;
		set_add(&seen, id);
		/* Latest epoch that began at or before the event (usec precision). */
		t_us = ts / 1000;
		while (lo <= hi) {
			long mid = (lo + hi) / 2;

			if (ep[mid].ts / 1000 <= t_us) {
				k = mid;
				lo = mid + 1;
			} else {
				hi = mid - 1;
			}
		}
		while (k >= 0 && smp_epoch_tag(ep[k].epoch) != tag)
			k--;
		if (k < 0) {
			/* Began before the reader attached: nothing to check. */
			older++;
			continue;
		}
		if (!set_has(&delivered, (ep[k].epoch << 32) | id)) {
			unresolved++;
			if (shown++ < 10)
				printf("STACKMAP-E2E: UNRESOLVED id=%u (tag %u slot %u) ts=%llu epoch=%llu epoch_ts=%llu\n",
				       id, tag, id & 0xfffff, (unsigned long long)ts,
				       (unsigned long long)ep[k].epoch,
				       (unsigned long long)ep[k].ts);
		}
	}

	printf("STACKMAP-E2E: STRESS-CHECK epochs=%zu first_epoch=%llu last_epoch=%llu entries_delivered=%llu duplicates=%llu bad_tags=%llu epoch_gaps=%llu records_before_first_epoch=%llu trace_ids_checked=%llu distinct_trace_ids=%zu unresolved=%llu before_reader=%llu\n",
	       nep, nep ? (unsigned long long)ep[0].epoch : 0ULL,
	       nep ? (unsigned long long)ep[nep - 1].epoch : 0ULL, stacks, dups,
	       badtag, gaps, before, ids, seen.n, unresolved, older);
	return (dups || badtag || gaps || before || unresolved || !nep || !ids || older) ? 1 : 0;
}

static int cmd_drain(void)
{
	static uint8_t buf[BUFSZ];
	unsigned long long recs = 0;
	int fd = open(TRACEFS "stack_map_delta", O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		die("open stack_map_delta");
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		size_t off = 0;
		struct smp_delta_rec r;

		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			die("read stack_map_delta");
		while (smp_delta_next(buf, (size_t)n, &off, &r) == 1)
			recs++;
	}
	close(fd);
	printf("%llu\n", recs);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "pipe"))
		return cmd_pipe(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "check"))
		return cmd_check(argv[2], argv[3]);
	if (argc == 2 && !strcmp(argv[1], "drain"))
		return cmd_drain();
	fprintf(stderr, "usage: smdelta read|pipe OUT STOPFILE | check DELTA PIPE | drain\n");
	return 2;
}
