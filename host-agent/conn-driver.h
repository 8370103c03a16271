/* SPDX-License-Identifier: MIT */
/*
 * conn-driver.h - one guest connection on the main loop: a HaConn over a HaLink.
 *
 * Every source (--socket, --listen, --socket-dir, --domain, --all-domains) hands
 * each connection it makes to one HaDriver and does nothing else with it; the driver
 * is the only code that moves bytes between a link (link.h) and an ingest connection
 * (ingest.h), so every source behaves the same:
 *
 *   readable     up to HA_DRIVER_READS_PER_WAKE reads and HA_DRIVER_BYTES_PER_WAKE
 *                bytes, each applied at once (ha_conn_read()); when they did not run
 *                the input dry, reading goes
 *                on from an idle callback (the readable notification may not come
 *                again for bytes already taken, and a guest waiting for its ACK sends
 *                nothing more), at the readable notifications' priority, so that a
 *                connection whose link is readable at every iteration (a flooding
 *                guest) cannot starve it; one wake per connection and iteration
 *   input dry    the batch's commit starts now, or by the commit timer when its
 *                oldest frame is HA_COMMIT_DELAY_US old (ha_conn_commit_due_ms()); it
 *                runs on a commit thread (ingest.h), and its ACK is written when it is
 *                done (HaConnCommitted), at the next iteration of the main loop,
 *                before any connection reads again
 *   paused       a batch full (or a frame that needs the store) while the last commit
 *                is still in flight: no reads (ha_link_want_read()) until it is done,
 *                so one slow store stalls its own guest only
 *   output       WELCOME, ACKs and clock probes are written at once; what the link
 *                does not take now waits for its writable notification (want-write),
 *                never for the next input
 *   clock probes every HaLimits.time_probe_ms (ha_conn_time_probe())
 *   end          the guest closed (end of input), a read or write error, a protocol
 *                error, a store failure or the quota: the driver logs why, closes the
 *                HaConn (which commits what is complete and records how the stream
 *                ended) and the link, then calls its owner's HaDriverEnded
 *
 * The owner frees the driver with ha_driver_free(), from its HaDriverEnded or at any
 * other time (it then closes the connection first, "host-agent stopping" say). A
 * driver freed from inside its own callbacks is released when they return.
 */
#ifndef HA_CONN_DRIVER_H
#define HA_CONN_DRIVER_H

#include <glib.h>
#include <stdbool.h>

#include "ingest.h"
#include "link.h"
#include "store.h"

/* Then yield to the main loop: with many guests one iteration serves each once, so a
 * wake's bytes bound how long a guest waits behind others that flood (a steady guest's
 * frame is read within one wake of each of them). */
#define HA_DRIVER_READS_PER_WAKE	64u
#define HA_DRIVER_BYTES_PER_WAKE	(256u << 10)

typedef struct _HaDriver HaDriver;

/* The connection ended by itself (the reason is logged); @d is inert from here. */
typedef void (*HaDriverEnded)(HaDriver *d, void *user);

/*
 * Run a new connection over @link (taken: closed on failure as well), storing into
 * @store (borrowed, must outlive the driver) under @limits. @domain and the link's
 * name label the logs. NULL with @error when the link cannot be watched, or when
 * another connection runs on @store (G_IO_ERROR_BUSY): one connection per store at a
 * time, as the store's one transaction holds one connection's batch.
 */
HaDriver *ha_driver_new(HaLink *link, HaStore *store, const HaLimits *limits,
			const char *domain, HaDriverEnded ended, void *user,
			GError **error);

/*
 * Read and apply everything the link holds now and commit it (before a crash is
 * recorded, say). False when the connection ended meanwhile (HaDriverEnded ran).
 */
bool ha_driver_drain(HaDriver *d);

/* Whether the connection is still up (HaDriverEnded did not run). */
bool ha_driver_running(const HaDriver *d);

/* The connection's counters (ingest.h); NULL once it ended. */
const HaConnStats *ha_driver_stats(const HaDriver *d);

/* Close the connection if it still runs (@why logged; NULL: nothing logged), then
 * free. NULL: nothing. */
void ha_driver_free(HaDriver *d, const char *why);

#endif /* HA_CONN_DRIVER_H */
