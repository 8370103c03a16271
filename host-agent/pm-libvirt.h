/* SPDX-License-Identifier: MIT */
/*
 * pm-libvirt.h - the post-mortem of a crashed libvirt domain (postmortem.h's flow,
 * through libvirt instead of QMP).
 *
 * An HaLvPm belongs to one libvirt source (source-libvirt.c), i.e. one domain and its
 * store. On the lifecycle event CRASHED, after the source has marked the boot crashed
 * (crash.h), ha_lv_pm_crashed() hands the blocking part to a worker thread (a GTask):
 *   on_crash   read from the live domain XML (virDomainGetXMLDesc): only `preserve`
 *              keeps the crashed guest's memory for us. `destroy` and `restart` have
 *              none left; `coredump-destroy` and `coredump-restart` are libvirt's own
 *              dump, taken in the job that handles the panic before it destroys or
 *              resets the guest: it holds the domain, so a dump of ours could only
 *              come after the guest is gone. Then libvirt's file is read instead,
 *              once the next lifecycle event says the job is past it
 *              (ha_lv_pm_event(); pm-libvirt.c says what libvirt 9.0 does and how
 *              the file is found), and kept.
 *   guards     the domain's memory (virDomainGetInfo) against --dump-max-mb, and the
 *              state directory's free space against that + 64 MiB, as the QMP path
 *   dump       virDomainCoreDumpWithFormat(RAW, VIR_DUMP_MEMORY_ONLY): QEMU's
 *              dump-guest-memory, an ELF core with the VMCOREINFO note, written by
 *              libvirtd into STATE-DIR/NAME.core (an absolute path: libvirtd opens it)
 * and the result comes back on the main loop, where ha_postmortem_recover() reads the
 * core into the crashed boot and the core is deleted unless --dump-keep. A guard or
 * the dump failing leaves a postmortems row 'failed' with why, as the QMP path does.
 *
 * Afterwards the domain stays as its on_crash says: `preserve` is the user asking to
 * keep the crashed guest, so it stays crashed (the QMP path's --keep-paused is thus
 * the rule here; `virsh destroy` ends it); coredump-* is libvirt destroying or
 * restarting it after its dump. The main loop never waits for libvirt: a
 * dump still running when the HaLvPm is freed finishes in its thread, its core is
 * deleted, and nothing is stored.
 */
#ifndef HA_PM_LIBVIRT_H
#define HA_PM_LIBVIRT_H

#include <glib.h>
#include <libvirt/libvirt.h>
#include <stdint.h>

#include "postmortem.h"
#include "store.h"

/*
 * The options of every libvirt source's post-mortem created after this call (--domain
 * and --all-domains; main.c calls it once with the daemon's options; copied). Without
 * it, libvirt sources take no dump.
 */
void ha_lv_pm_configure(const HaPmOpts *o);

typedef struct _HaLvPm HaLvPm;

/* For the domain whose store is @store (borrowed, must outlive it unless freed first)
 * and is named @label (the core is STATE-DIR/@label.core). NULL when
 * ha_lv_pm_configure() was not called or turned it off. */
HaLvPm *ha_lv_pm_new(HaStore *store, const char *label);

/*
 * The domain @dom crashed and its boot is marked (the crash mark's time is at or after
 * @alive_since_us): dump and recover as the header says. @dom is borrowed (the worker
 * takes a reference of its own). Ignored while a previous post-mortem runs.
 */
void ha_lv_pm_crashed(HaLvPm *pm, virDomainPtr dom, int64_t alive_since_us);

/* Every lifecycle event of the domain (VIR_DOMAIN_EVENT_*), after CRASHED's own
 * handling: one after CRASHED means libvirt's panic job is past its coredump-* dump. */
void ha_lv_pm_event(HaLvPm *pm, int event);

/* Stop: a dump in flight finishes in its thread, its core deleted, nothing stored. */
void ha_lv_pm_free(HaLvPm *pm);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaLvPm, ha_lv_pm_free)

#endif /* HA_PM_LIBVIRT_H */
