/* SPDX-License-Identifier: MIT */
/*
 * export-perf.h - events in the text layout of `perf script` (report events
 * --format perf-script), which Perfetto UI, speedscope, Firefox Profiler and
 * FlameGraph's stackcollapse-perf.pl read:
 *
 *   COMM  PID [CPU] SECONDS.NANOSECONDS: SYSTEM:EVENT: FIELDS
 *   \tADDRESS SYMBOL+0xOFF (DSO)          one line per frame, the leaf first
 *   (an empty line ends each sample)
 *
 * DSO is "[kernel.kallsyms]" for the kernel, "[MODULE]" for a module's symbol and
 * "[unknown]" (symbol "[unknown]") for an address kallsyms does not cover. The guest
 * does not send task names: COMM is "<...>", as trace-cmd prints an unknown pid.
 */
#ifndef HA_EXPORT_PERF_H
#define HA_EXPORT_PERF_H

#include <glib.h>
#include <stdint.h>

#include "resolve.h"

/*
 * Append one sample to @out: @text is host-agent's "system/event: fields" text of the
 * event, @ips (@nr, innermost first) its stack, none when @nr is 0.
 */
void ha_perf_script_sample(GString *out, uint64_t ts, uint32_t cpu, int pid,
			   const char *text, const uint64_t *ips, guint nr,
			   const HaSyms *syms);

#endif /* HA_EXPORT_PERF_H */
