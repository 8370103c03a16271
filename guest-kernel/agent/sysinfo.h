/* SPDX-License-Identifier: MIT */
/*
 * sysinfo.h - facts about the running kernel that go into HELLO: boot_id, release,
 * vmlinux build-id, the runtime address of _text; and whether pages may have moved in
 * physical memory (for the window's page map, arena.h). Roots are parameters (procfs
 * and sysfs), so tests use fake trees.
 */
#ifndef SMG_SYSINFO_H
#define SMG_SYSINFO_H

#include <stdbool.h>
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

/*
 * Page moves. The kernel moves a page of user memory to another physical frame, mlocked
 * or not, through migrate_pages() (compaction, NUMA balancing, memory offlining, CMA,
 * move_pages(2)), which adds the pages it moved to /proc/vmstat's pgmigrate_success
 * once they are moved, or by khugepaged's collapse into a huge page, which adds to
 * thp_collapse_alloc when it allocates the huge page, before it copies. Their sum
 * unchanged over two checks in a row: no page moved since the check before them, and
 * none was in a collapse then (one that takes less than a check's interval), so a page
 * map read at that earlier check still holds. The agent reads the window's page map
 * (4,096 entries by default, each walked by the kernel) only when that is not so.
 */
struct sysinfo_moves {
	uint64_t last[2];	/* the sum at the last check and at the one before */
	unsigned checks;	/* checks that read it (saturates at 2) */
};

/* The sum in /proc/vmstat text. A kernel without CONFIG_MIGRATION (no compaction, CMA,
 * NUMA balancing or memory hot-remove: they all need it) has no pgmigrate_success and
 * moves no page that way; one without THP has no thp_collapse_alloc and no collapse:
 * each counts as 0. -EBADMSG when @vmstat is not vmstat (no nr_free_pages). */
int sysinfo_parse_moves(const char *vmstat, uint64_t *ret);

/*
 * One check with the result of reading the sum (@r < 0: could not): true when pages
 * may have moved since the check before the last one (read the page map), false when
 * the sum is the same as at the last two checks. @m then holds this check.
 */
bool sysinfo_moves_step(struct sysinfo_moves *m, int r, uint64_t sum);

/* sysinfo_moves_step() with <procfs>/vmstat. */
bool sysinfo_pages_may_have_moved(struct sysinfo_moves *m, const char *procfs);

/* A random non-zero 64-bit stream id. */
uint64_t sysinfo_random_u64(void);

#endif
