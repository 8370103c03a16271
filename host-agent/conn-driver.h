/* SPDX-License-Identifier: MIT */
/*
 * conn-driver.h - one guest connection on a thread of its own: a HaConn over a HaLink.
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
 *                ended) and the link, then tells its owner (HaDriverEnded)
 *
 * Threads. Each driver runs its connection on a thread of its own, with a
 * GMainContext of its own (the thread-default there): the link's notifications
 * (link.h), the timers above, the HaConn's commit-done and compaction sources
 * (ingest.h). The read, decode and apply of a stream thus use a core of their own:
 * with many guests the kernel spreads them over the host's cores, and a guest that
 * floods, or one whose HELLO's formats take the sandbox seconds (tep.h), or whose
 * store's fsync stalls, holds up only its own thread: another's reads and ACKs never
 * wait for it (only for a core, and for their commit a commit thread: ingest.h).
 * A thread per connection rather than a bounded set of apply threads with
 * connections assigned to them: a set shared by guests would put a hostile guest's
 * long apply back in front of others' ACKs, which is what this is for; the threads
 * are bounded by the connections (HA_DIR_MAX_VMS, the domains), each mostly asleep in
 * poll(). Commits go through the commit threads every connection shares (two pools:
 * full batches, small ones; ingest-commit.c).
 *
 * The owner (a source, on the main loop) calls everything here from its own thread,
 * the thread-default context of its ha_driver_new() call, and is told there:
 * HaDriverEnded runs on the owner's context, never on the connection's thread. Its
 * calls that need the connection (ha_driver_drain(), ha_driver_stats(),
 * ha_driver_free()) run on the connection's thread, and wait for it.
 *
 * The store of a running driver belongs to its thread (and to the commit thread it
 * lends it to, store.h). Code of the owner's thread that must use that store while the
 * connection may run (a crash mark, a post-mortem) takes it first with
 * ha_driver_hold_store(): the connection's thread then waits, between two of its
 * callbacks (where a batch may be open: what the holder writes joins it, as when both
 * ran on one thread), until ha_driver_release().
 *
 * The owner frees the driver with ha_driver_free(), from its HaDriverEnded or at any
 * other time (it then closes the connection first, "host-agent stopping" say): the
 * connection's thread closes the connection and ends, and an HaDriverEnded not run
 * yet never runs.
 */
#ifndef HA_CONN_DRIVER_H
#define HA_CONN_DRIVER_H

#include <glib.h>
#include <stdbool.h>

#include "ingest.h"
#include "link.h"
#include "store.h"

/* Then yield to the connection's loop: a commit done meanwhile is acknowledged before
 * the next wake's reads (its source is above them), so a wake's bytes bound how long
 * the ACK of a guest that floods waits for its own reads. */
#define HA_DRIVER_READS_PER_WAKE	64u
#define HA_DRIVER_BYTES_PER_WAKE	(256u << 10)

typedef struct _HaDriver HaDriver;

/* The connection ended by itself (the reason is logged); @d is inert from here. On
 * the owner's thread. */
typedef void (*HaDriverEnded)(HaDriver *d, void *user);

/*
 * Run a new connection over @link (taken: closed on failure as well), storing into
 * @store (borrowed, must outlive the driver) under @limits. @domain and the link's
 * name label the logs. NULL with @error when the link cannot be watched, or when
 * another connection runs on @store (G_IO_ERROR_BUSY): one connection per store at a
 * time, as the store's one transaction holds one connection's batch. A connection that
 * ended holds its store until its owner is told (its HaDriverEnded returned) or frees
 * it, so that an owner never takes a new connection's driver for the old one's.
 */
HaDriver *ha_driver_new(HaLink *link, HaStore *store, const HaLimits *limits,
			const char *domain, HaDriverEnded ended, void *user,
			GError **error);

/*
 * Read and apply everything the link holds now and commit it (before a crash is
 * recorded, say). False when the connection ended meanwhile (HaDriverEnded ran).
 */
bool ha_driver_drain(HaDriver *d);

/* Whether the connection is still up (it did not end; HaDriverEnded may be on its way). */
bool ha_driver_running(const HaDriver *d);

/* A copy of the connection's counters (ingest.h) into *@ret; false (nothing copied)
 * once it ended. */
bool ha_driver_stats(HaDriver *d, HaConnStats *ret);

/*
 * Take @store from the connection running on it, if any (see Threads above): its
 * thread waits between two callbacks until ha_driver_release(). From the owners'
 * thread (no driver starts or ends meanwhile: they are made and freed there), or from
 * the connection's own thread (nothing to wait for). NULL when no connection runs on
 * @store, or from its thread: the caller uses the store freely. Holds nest (on the
 * holder's thread); the holder must not free the driver meanwhile.
 */
typedef struct _HaDriverHold HaDriverHold;
HaDriverHold *ha_driver_hold_store(HaStore *store);
/* Give it back (NULL: nothing). */
void ha_driver_release(HaDriverHold *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaDriverHold, ha_driver_release)

/* Close the connection if it still runs (@why logged; NULL: nothing logged), then
 * free. NULL: nothing. */
void ha_driver_free(HaDriver *d, const char *why);

#endif /* HA_CONN_DRIVER_H */
