// SPDX-License-Identifier: MIT
/* store-clock.c - a boot's clock samples (see store-clock.h). */
#include "store-clock.h"
#include "store-int.h"

bool ha_store_clock_samples(HaStore *s, int64_t boot, GArray *ret, GError **error)
{
	sqlite3_stmt *st = ha_store_stmt(s, "SELECT guest_ts, cpu, mono_lo, mono_hi, real_lo,"
					 " real_hi, boot_off, tai_off FROM clock_samples"
					 " WHERE boot = ?", error);
	int rc;

	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, boot);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		HaClockSample c = {
			.guest_ts = (uint64_t)sqlite3_column_int64(st, 0),
			.cpu = (uint32_t)sqlite3_column_int64(st, 1),
			.mono_lo = sqlite3_column_int64(st, 2),
			.mono_hi = sqlite3_column_int64(st, 3),
			.real_lo = sqlite3_column_int64(st, 4),
			.real_hi = sqlite3_column_int64(st, 5),
			.boot_off = sqlite3_column_int64(st, 6),
			.tai_off = sqlite3_column_int64(st, 7),
		};

		g_array_append_val(ret, c);
	}
	return ha_store_done(s, st, rc, error, "read clock samples");
}
