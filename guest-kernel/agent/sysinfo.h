/* SPDX-License-Identifier: MIT */
/*
 * sysinfo.h - facts about the running kernel that go into HELLO: boot_id, release,
 * vmlinux build-id, the runtime address of _text. Roots are parameters (procfs and
 * sysfs), so tests use fake trees.
 */
#ifndef SMG_SYSINFO_H
#define SMG_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

/* Parse "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (boot_id) into 16 bytes. */
int sysinfo_parse_uuid(const char *text, uint8_t ret[16]);
int sysinfo_boot_id(const char *procfs, uint8_t ret[16]);

/* <procfs>/sys/kernel/osrelease, else uname(2). */
int sysinfo_release(const char *procfs, char *ret, size_t cap);

/* The GNU build-id note in an ELF note section (@buf, @len, native order). Returns its
 * length (<= @cap, copied into @ret), or -ENOENT. */
int sysinfo_parse_build_id(const uint8_t *buf, size_t len, uint8_t *ret, size_t cap);
/* From <sysfs>/kernel/notes. */
int sysinfo_build_id(const char *sysfs, uint8_t *ret, size_t cap);

/* The address of _text in kallsyms text ("ffffffff81000000 T _text"); -ENOENT. */
int sysinfo_text_addr(const char *kallsyms, uint64_t *ret);

/* A random non-zero 64-bit stream id. */
uint64_t sysinfo_random_u64(void);

#endif
