/* SPDX-License-Identifier: MIT */
/*
 * postmortem.h - recover a crashed boot's kernel log from the guest's memory.
 *
 * The flow (plain QEMU, qmp.c): the guest panics; pvpanic makes QEMU send
 * GUEST_PANICKED, and with `-action panic=pause` QEMU keeps the guest, memory and
 * all. The QMP watcher marks the boot crashed (crash.h), checks the guest's RAM
 * against --dump-max-mb and the free space of the state directory, and asks QEMU
 * for `dump-guest-memory` (ELF, no paging, detached) into STATE-DIR/DOMAIN.core. On
 * DUMP_COMPLETED, ha_postmortem_recover() reads the core (coredump.h), its VMCOREINFO
 * note (vmcoreinfo.h: the guest's fw_cfg driver wrote it into QEMU's -device
 * vmcoreinfo), translates the kernel's addresses with KASLR's offsets (kvmem.h), walks
 * the printk ring buffer (kmsg.h) and stores the records into the crashed boot
 * (store-postmortem.h). The core is deleted unless --dump-keep; then QEMU is told to
 * `quit` unless --keep-paused: the guest is dead, the panic action paused it only for
 * the dump.
 *
 * Why VMCOREINFO: it is the kernel's own description of itself for dump readers,
 * written at boot, with the runtime (KASLR-slid) addresses and the printk structures'
 * offsets, so the host needs no vmlinux and no symbols of the guest, and a different
 * guest kernel (another version, another config) is read by the same code. It needs
 * CONFIG_FW_CFG_SYSFS and CONFIG_CRASH_CORE (selected by KEXEC_CORE) in the guest,
 * and `-device vmcoreinfo` on the QEMU line.
 *
 * Nothing from the dump is trusted (each module's header says how it is bounded). A
 * dump that cannot be used gives a postmortems row with status 'failed' and why; the
 * streamed rows of the boot are never touched.
 */
#ifndef HA_POSTMORTEM_H
#define HA_POSTMORTEM_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "coredump.h"
#include "kvmem.h"
#include "kmsg.h"
#include "store.h"
#include "vmcoreinfo.h"

typedef struct {
	bool enabled;		/* dump and recover on a paused panic */
	bool keep_dump;		/* --dump-keep: leave DOMAIN.core in the state dir */
	bool keep_paused;	/* --keep-paused: do not quit QEMU afterwards */
	uint64_t max_bytes;	/* --dump-max-mb: guest RAM above this is not dumped */
	const char *dump_dir;	/* the state directory (borrowed) */
} HaPmOpts;

#define HA_PM_DEFAULT_MAX_MB	4096

/*
 * The kernel log in @core: its VMCOREINFO, the reader of kernel addresses, the walk.
 * NULL with @error when any step fails. @ret_vi (may be NULL) gets the VMCOREINFO
 * when it was found, even when a later step failed; @ret_m (may be NULL, only with
 * @ret_vi) the reader of kernel addresses when it was made, for the other walks (it
 * borrows *@ret_vi: free it first).
 */
HaKmsg *ha_postmortem_kmsg(HaCore *core, HaVmci **ret_vi, HaKvmem **ret_m,
			   GError **error);

/*
 * Recover from the core file @path into @boot of @store. @source says how the memory
 * was read (stored and reported: "qmp dump-guest-memory", ...); @dump_ms what the
 * dump cost (-1: unknown). A postmortems row is written whatever happens (status
 * recovered, partial or failed, with why), unless the store itself fails. False with
 * @error when nothing was recovered.
 */
#define HA_PM_SOURCE_QMP	"qmp dump-guest-memory"
#define HA_PM_SOURCE_LIBVIRT	"libvirt virDomainCoreDumpWithFormat"
#define HA_PM_SOURCE_LIBVIRT_OWN "libvirt's own dump (on_crash coredump-*)"
#define HA_PM_SOURCE_FILE	"host-agent recover FILE"
bool ha_postmortem_recover(HaStore *store, int64_t boot, const char *path,
			   const char *source, int64_t dump_ms, GError **error);

#endif /* HA_POSTMORTEM_H */
