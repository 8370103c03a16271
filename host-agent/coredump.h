/* SPDX-License-Identifier: MIT */
/*
 * coredump.h - a guest's memory as an ELF core (QEMU's dump-guest-memory, "elf").
 *
 * The core is an ELF64 little-endian ET_CORE file for x86-64: PT_NOTE segments (the
 * vCPUs' registers, and the guest's own VMCOREINFO note when the guest filled QEMU's
 * -device vmcoreinfo) and one PT_LOAD segment per range of guest RAM, whose p_paddr is
 * the guest physical address of its first byte and whose p_filesz bytes are in the
 * file at p_offset.
 *
 * Every byte of it is hostile: the notes and the memory are the guest's, and the file
 * may be truncated or not a core at all. An HaCore is validated when it is opened
 * (header, program header count and table in the file, each segment's bytes in the
 * file, segments not overlapping in physical memory, notes' sizes) and reads never go
 * outside the file: a physical range is readable only when one PT_LOAD holds all of
 * its bytes in the file. Reads use pread() (a file) or memcpy (a buffer, the fuzz
 * target's), never mmap(), so a file truncated under the reader gives an error, not a
 * SIGBUS.
 *
 * Life cycle: ha_core_open_fd() / ha_core_open_mem(), any number of reads,
 * ha_core_free().
 */
#ifndef HA_COREDUMP_H
#define HA_COREDUMP_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds on what a core may hold (a larger one is refused, not truncated). */
#define HA_CORE_MAX_PHDRS	65536	/* program headers */
#define HA_CORE_MAX_NOTES_BYTES	(16u << 20)	/* all PT_NOTE segments together */
#define HA_CORE_MAX_NOTES	4096

typedef struct _HaCore HaCore;

/* A core in file @fd (borrowed: it must stay open until ha_core_free()). NULL with
 * @error when it is not a usable core (the message says why). */
HaCore *ha_core_open_fd(int fd, GError **error);
/* A core in @buf (borrowed, @len bytes), as for ha_core_open_fd(). */
HaCore *ha_core_open_mem(const void *buf, size_t len, GError **error);
void ha_core_free(HaCore *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(HaCore, ha_core_free)

/*
 * The descriptor of the first note named @name of type @type, or NULL. Owned by @c,
 * valid until ha_core_free(); @len set to its size. Not NUL-terminated.
 */
const uint8_t *ha_core_note(const HaCore *c, const char *name, uint32_t type, size_t *len);

/* Read @len bytes of guest physical memory at @paddr into @buf. False when any of them
 * is not in one PT_LOAD's file bytes, or on a read error (@buf then undefined). */
bool ha_core_read_phys(HaCore *c, uint64_t paddr, void *buf, size_t len);

/* The guest RAM the core holds: the sum of the PT_LOAD segments' file bytes. */
uint64_t ha_core_ram_bytes(const HaCore *c);
/* How many bytes of the file the reads so far took (headers, notes, memory). */
uint64_t ha_core_bytes_read(const HaCore *c);
/* How many PT_LOAD segments. */
guint ha_core_nr_loads(const HaCore *c);

#endif /* HA_COREDUMP_H */
