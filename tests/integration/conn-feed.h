/* SPDX-License-Identifier: MIT */
/*
 * conn-feed.h - for unit tests of the ingest: bytes and frames into a HaConn as a
 * connection driver would hand them over (ha_conn_space()/ha_conn_commit()).
 */
#ifndef TEST_CONN_FEED_H
#define TEST_CONN_FEED_H

#include <glib.h>
#include <string.h>

#include "guest-formats.h"
#include "ingest.h"
#include "proto.h"

static inline void conn_feed(HaConn *c, const uint8_t *buf, size_t len)
{
	while (len) {
		uint8_t *space;
		size_t room = ha_conn_space(c, &space), n = MIN(room, len);

		memcpy(space, buf, n);
		ha_conn_commit(c, n);
		buf += n;
		len -= n;
	}
}

/* One frame of @type and @seq around @p, fed and processed. */
static inline bool conn_send_frame(HaConn *c, uint8_t type, uint64_t seq, const void *p,
				   size_t len, GError **error)
{
	g_autofree uint8_t *buf = g_malloc(SMP_HDR_SIZE + len);
	long n = smp_frame_encode(buf, SMP_HDR_SIZE + len, type, 0, seq, p, len);

	conn_feed(c, buf, (size_t)n);
	return ha_conn_process(c, error);
}

/* The FORMAT frames of guest-formats.h's events, from *@seq on. */
static inline bool conn_send_formats(HaConn *c, uint64_t *seq, GError **error)
{
	g_autofree uint8_t *p = g_malloc(SMP_MAX_PAYLOAD);

	for (unsigned int i = 0; i < gf_nr_formats; i++) {
		struct smp_format m = {
			.name = gf_formats[i].name,
			.name_len = (uint16_t)strlen(gf_formats[i].name),
			.text = gf_formats[i].text, .text_len = strlen(gf_formats[i].text),
		};
		long n = smp_format_encode(&m, p, SMP_MAX_PAYLOAD);

		if (n < 0 || !conn_send_frame(c, SMP_FORMAT, (*seq)++, p, (size_t)n, error))
			return false;
	}
	return true;
}

/* The last value of a @want frame in @c's output (the output is consumed), 0: none:
 * an ACK's acked_seq, a WELCOME's resume_seq. */
static inline uint64_t conn_last_out(HaConn *c, uint8_t want)
{
	size_t len;
	const uint8_t *out = ha_conn_output(c, &len);
	struct smp_decoder *d = smp_decoder_new(64);
	struct smp_frame f;
	uint64_t v = 0;

	smp_decoder_feed(d, out, len);
	while (smp_decoder_next(d, &f, NULL) == 1) {
		struct smp_welcome w;

		if (f.type != want)
			continue;
		if (want == SMP_ACK)
			smp_ack_decode(&v, f.payload, f.len);
		else if (want == SMP_WELCOME && smp_welcome_decode(&w, f.payload, f.len) == 0)
			v = w.resume_seq;
	}
	smp_decoder_free(d);
	ha_conn_output_done(c, len);
	return v;
}

static inline uint64_t conn_last_ack(HaConn *c)
{
	return conn_last_out(c, SMP_ACK);
}

#endif /* TEST_CONN_FEED_H */
