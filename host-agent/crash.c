// SPDX-License-Identifier: MIT
/* crash.c - mark a domain's current boot crashed (see crash.h). */
#include "crash.h"

#include <inttypes.h>

#include "conn-driver.h"
#include "store-crash.h"

bool ha_crash_mark(HaStore *store, const char *domain, int64_t when_us,
		   int64_t alive_since_us, const char *why)
{
	/* the store's connection runs on its own thread: it waits meanwhile */
	g_autoptr(HaDriverHold) hold = ha_driver_hold_store(store);
	g_autoptr(GError) e = NULL;
	int64_t boot;
	bool own_txn = !ha_store_in_txn(store);

	/* Inside a connection's open batch the update commits with that batch (before
	 * its ACK), else in a transaction of its own. */
	if (own_txn && !ha_store_begin(store, &e))
		goto fail;
	if (!ha_store_crash_current_boot(store, alive_since_us, &boot, &e))
		goto fail;
	if (!boot) {
		if (own_txn)
			ha_store_rollback(store);
		g_message("%s: %s, but no boot is streaming (the guest crashed before its"
			  " agent said HELLO, or its boot already ended)", domain, why);
		return false;
	}
	if (!ha_store_crash_mark_boot(store, boot, when_us, &e))
		goto fail;
	if (own_txn && !ha_store_commit(store, &e))
		goto fail;
	g_message("%s: %s: boot %" PRId64 " marked crashed", domain, why, boot);
	return true;

fail:
	if (own_txn)
		ha_store_rollback(store);
	g_warning("%s: %s, but the boot could not be marked crashed: %s", domain, why,
		  e ? e->message : "?");
	return false;
}
