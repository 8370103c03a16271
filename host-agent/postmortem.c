// SPDX-License-Identifier: MIT
/* postmortem.c - a crashed guest's kernel log out of its core (see postmortem.h). */
#include "postmortem.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "kvmem.h"
#include "store-postmortem.h"

HaKmsg *ha_postmortem_kmsg(HaCore *core, HaVmci **ret_vi, GError **error)
{
	g_autoptr(HaVmci) vi = NULL;
	g_autoptr(HaKvmem) m = NULL;
	HaKmsg *k;
	const uint8_t *note;
	size_t len;

	note = ha_core_note(core, "VMCOREINFO", 0, &len);
	if (!note) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "the dump has no VMCOREINFO note (the guest needs"
			    " CONFIG_FW_CFG_SYSFS and CONFIG_CRASH_CORE, QEMU -device"
			    " vmcoreinfo)");
		return NULL;
	}
	vi = ha_vmci_parse(note, len, error);
	if (!vi)
		return NULL;
	m = ha_kvmem_new(core, vi, error);
	k = m ? ha_kmsg_recover(m, vi, error) : NULL;
	if (ret_vi)
		*ret_vi = g_steal_pointer(&vi);
	return k;
}

bool ha_postmortem_recover(HaStore *store, int64_t boot, const char *path,
			   int64_t dump_ms, GError **error)
{
	g_autoptr(GError) e = NULL, se = NULL;
	g_autoptr(HaCore) core = NULL;
	g_autoptr(HaVmci) vi = NULL;
	g_autoptr(HaKmsg) k = NULL;
	g_autofree char *msg = NULL;
	int64_t t0 = g_get_monotonic_time();
	uint64_t off;
	HaPmRow row = {
		.time_us = g_get_real_time(),
		.source = "qmp dump-guest-memory",
		.dump_ms = dump_ms,
		.kernel_offset = -1,
	};
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		g_set_error(&e, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s", path,
			    g_strerror(errno));
	} else {
		core = ha_core_open_fd(fd, &e);
		if (core) {
			row.dump_bytes = ha_core_ram_bytes(core);
			k = ha_postmortem_kmsg(core, &vi, &e);
		} else {
			g_prefix_error(&e, "%s: ", path);
		}
	}
	if (vi) {
		const char *rel = ha_vmci_get(vi, "OSRELEASE");

		row.osrelease = rel;
		if (ha_vmci_hex(vi, "KERNELOFFSET", &off) && off <= INT64_MAX)
			row.kernel_offset = (int64_t)off;
		if (k && !ha_store_pm_same_kernel(store, boot, rel, ha_vmci_get(vi, "BUILD-ID"),
						  &e))
			g_clear_pointer(&k, ha_kmsg_free);
	}
	row.recover_ms = (g_get_monotonic_time() - t0) / 1000;
	if (core)
		g_message("post-mortem: read %" PRIu64 " bytes of the %" PRIu64 " MiB dump in"
			  " %" PRId64 " ms: %s", ha_core_bytes_read(core), row.dump_bytes >> 20,
			  row.recover_ms, k ? "kernel log recovered" : e->message);
	if (k) {
		row.status = k->skipped ? "partial" : "recovered";
		if (k->skipped)
			row.message = msg = g_strdup_printf("%" PRIu64 " log records in the"
							    " ring could not be read",
							    k->skipped);
	} else {
		row.status = "failed";
		row.message = e->message;
	}
	if (!ha_store_pm_save(store, boot, &row, k, &se)) {
		if (fd >= 0)
			close(fd);
		g_propagate_error(error, g_steal_pointer(&se));
		return false;
	}
	if (fd >= 0)
		close(fd);	/* after the last read of @core */
	if (!k) {
		g_propagate_error(error, g_steal_pointer(&e));
		return false;
	}
	return true;
}
