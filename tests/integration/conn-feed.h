/* SPDX-License-Identifier: MIT */
/*
 * conn-feed.h - for unit tests of the ingest: bytes and frames into a HaConn as a
 * connection driver would hand them over (ha_conn_space()/ha_conn_commit()).
 */
#ifndef TEST_CONN_FEED_H
#define TEST_CONN_FEED_H

#include <glib.h>
#include <string.h>

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

#endif /* TEST_CONN_FEED_H */
