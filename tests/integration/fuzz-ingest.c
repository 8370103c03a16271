// SPDX-License-Identifier: MIT
/*
 * fuzz-ingest - libFuzzer target for one guest connection (ingest.c) on a fresh
 * in-memory store: a valid HELLO, the 6.1 FORMAT texts and an EPOCH, then frames the
 * fuzzer chooses. Input: records of u8 type, u16 length (little-endian), payload;
 * the harness seals each as a frame with the next sequence number (every 16th record
 * re-uses an older one, every 32nd skips ahead) so that the decoders, size table and
 * handlers are reached rather than stopped at the checksums.
 */
#include <string.h>

#include "guest-formats.h"
#include "ingest.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t frame[SMP_HDR_SIZE + 65536 + 64];

static void feed(HaConn *c, const uint8_t *buf, size_t len)
{
	while (len) {
		uint8_t *space;
		size_t room = ha_conn_space(c, &space), n = len < room ? len : room;

		if (!room) {
			if (!ha_conn_process(c, NULL))
				return;
			continue;
		}
		memcpy(space, buf, n);
		ha_conn_commit(c, n);
		buf += n;
		len -= n;
	}
}

static bool send(HaConn *c, uint8_t type, uint64_t seq, const void *p, size_t len)
{
	long n = smp_frame_encode(frame, sizeof(frame), type, 0, seq, p, len);

	if (n < 0)
		return true;
	feed(c, frame, (size_t)n);
	return ha_conn_process(c, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HaStore *s = ha_store_open(":memory:", false, NULL);
	HaLimits lim;
	HaConn *c;
	uint8_t p[4096];
	struct smp_hello h = {
		.stream_id = 1, .text_addr = 0xffffffff81000000ull, .nr_cpus = 2,
		.page_size = 4096, .map_bits = 10, .max_depth = 64,
		.release = "6.1.0", .release_len = 5, .trace_clock = "local", .clock_len = 5,
	};
	uint64_t seq = 1;
	size_t off = 0;
	long n;
	bool ok;

	if (!s)
		return 0;
	ha_limits_default(&lim);
	lim.max_malformed = 50;
	c = ha_conn_new(s, &lim, "fuzz", "fuzz");
	n = smp_hello_encode(&h, p, sizeof(p));
	ok = send(c, SMP_HELLO, 0, p, (size_t)n);
	for (unsigned int i = 0; ok && i < gf_nr_formats; i++) {
		struct smp_format m = {
			.name = gf_formats[i].name, .name_len = (uint16_t)strlen(gf_formats[i].name),
			.text = gf_formats[i].text, .text_len = strlen(gf_formats[i].text),
		};

		n = smp_format_encode(&m, p, sizeof(p));
		ok = send(c, SMP_FORMAT, seq++, p, (size_t)n);
	}
	n = smp_delta_put_epoch(p, sizeof(p), 0, 0);
	ok = ok && send(c, SMP_EPOCH, seq++, p, (size_t)n);
	for (unsigned int r = 0; ok && size - off >= 3; r++) {
		uint8_t type = data[off];
		size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;

		off += 3;
		if (len > size - off)
			len = size - off;
		if (r % 16 == 15 && seq > 2)
			seq -= 2;	/* a resend */
		if (r % 32 == 31)
			seq += 3;	/* a gap */
		ok = send(c, type, type == SMP_HELLO || type >= 128 ? 0 : seq++, data + off, len);
		off += len;
		if (r % 8 == 7 && ok)
			ok = ha_conn_flush(c, NULL);
	}
	if (ok)
		ha_conn_flush(c, NULL);
	ha_conn_close(c);
	ha_conn_free(c);
	ha_store_free(s);
	return 0;
}
