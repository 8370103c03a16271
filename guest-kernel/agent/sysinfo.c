// SPDX-License-Identifier: MIT
/*
 * sysinfo.c - HELLO facts (see sysinfo.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>

#include "sysinfo.h"
#include "util.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sysinfo_parse_uuid(const char *text, uint8_t ret[16])
{
	uint8_t id[16];
	int n = 0;

	for (const char *p = text; *p && *p != '\n' && n < 32; p++) {
		int v;

		if (*p == '-')
			continue;
		v = hexval(*p);
		if (v < 0)
			return -EBADMSG;
		if (n % 2 == 0)
			id[n / 2] = (uint8_t)(v << 4);
		else
			id[n / 2] |= (uint8_t)v;
		n++;
	}
	if (n != 32)
		return -EBADMSG;
	memcpy(ret, id, 16);
	return 0;
}

int sysinfo_boot_id(const char *procfs, uint8_t ret[16])
{
	_cleanup_free_ char *text = NULL;
	char path[4096];
	int r;

	r = path_fmt(path, sizeof(path), "%s/sys/kernel/random/boot_id", procfs);
	if (r < 0)
		return r;
	r = read_file(path, 256, &text, NULL);
	if (r < 0)
		return r;
	return sysinfo_parse_uuid(text, ret);
}

int sysinfo_release(const char *procfs, char *ret, size_t cap)
{
	_cleanup_free_ char *text = NULL;
	char path[4096];
	struct utsname u;
	size_t n;

	if (path_fmt(path, sizeof(path), "%s/sys/kernel/osrelease", procfs) == 0 &&
	    read_file(path, 256, &text, NULL) == 0) {
		n = strcspn(text, "\n");
		if (n > 0 && n < cap && n <= 255) {
			memcpy(ret, text, n);
			ret[n] = '\0';
			return 0;
		}
	}
	if (uname(&u) < 0)
		return negerrno();
	n = strlen(u.release);
	if (n == 0 || n >= cap || n > 255)
		return -EBADMSG;
	memcpy(ret, u.release, n + 1);
	return 0;
}

#define NT_GNU_BUILD_ID_TYPE 3

int sysinfo_parse_build_id(const uint8_t *buf, size_t len, uint8_t *ret, size_t cap)
{
	size_t off = 0;

	while (len - off >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_al, desc_al;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		off += 12;
		name_al = ((size_t)namesz + 3) & ~(size_t)3;
		desc_al = ((size_t)descsz + 3) & ~(size_t)3;
		if (name_al > len - off || desc_al > len - off - name_al)
			return -EBADMSG;
		if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 &&
		    memcmp(buf + off, "GNU", 4) == 0) {
			if (descsz == 0 || descsz > cap || descsz > 255)
				return -EBADMSG;
			memcpy(ret, buf + off + name_al, descsz);
			return (int)descsz;
		}
		off += name_al + desc_al;
	}
	return -ENOENT;
}

int sysinfo_build_id(const char *sysfs, uint8_t *ret, size_t cap)
{
	_cleanup_free_ char *buf = NULL;
	char path[4096];
	size_t len;
	int r;

	r = path_fmt(path, sizeof(path), "%s/kernel/notes", sysfs);
	if (r < 0)
		return r;
	r = read_file(path, 64 * 1024, &buf, &len);
	if (r < 0)
		return r;
	return sysinfo_parse_build_id((const uint8_t *)buf, len, ret, cap);
}

int sysinfo_text_addr(const char *kallsyms, uint64_t *ret)
{
	const char *p = kallsyms;

	while (p && *p) {
		unsigned long long addr;
		char type, name[16];

		if (sscanf(p, "%llx %c %15s", &addr, &type, name) == 3 &&
		    strcmp(name, "_text") == 0) {
			const char *eol = strchr(p, '\n');
			size_t l = eol ? (size_t)(eol - p) : strlen(p);

			/* exactly "_text", not "_text_foo" or a module symbol "[mod]" */
			if (l >= 6 && memcmp(p + l - 6, " _text", 6) == 0) {
				*ret = addr;
				return 0;
			}
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/* The value of the line "@key N" in vmstat text: -ENOENT without one. */
static int vmstat_value(const char *text, const char *key, uint64_t *ret)
{
	size_t kl = strlen(key);

	/* strstr() over the whole text: cheaper than a compare at each of its lines */
	for (const char *p = strstr(text, key); p; p = strstr(p + kl, key)) {
		uint64_t v = 0;
		const char *d;

		if ((p != text && p[-1] != '\n') || p[kl] != ' ')
			continue;
		for (d = p + kl + 1; *d >= '0' && *d <= '9'; d++)
			v = v * 10 + (uint64_t)(*d - '0');
		if (d == p + kl + 1)
			return -EBADMSG;
		*ret = v;
		return 0;
	}
	return -ENOENT;
}

int sysinfo_parse_moves(const char *vmstat, uint64_t *ret)
{
	uint64_t free_pages, migrated = 0, collapsed = 0;
	int r = vmstat_value(vmstat, "nr_free_pages", &free_pages);

	if (r < 0)		/* not /proc/vmstat */
		return r == -ENOENT ? -EBADMSG : r;
	/* absent: a kernel without CONFIG_MIGRATION (no migrate_pages()) or THP */
	r = vmstat_value(vmstat, "pgmigrate_success", &migrated);
	if (r < 0 && r != -ENOENT)
		return r;
	r = vmstat_value(vmstat, "thp_collapse_alloc", &collapsed);
	if (r < 0 && r != -ENOENT)
		return r;
	*ret = migrated + collapsed;
	return 0;
}

bool sysinfo_moves_step(struct sysinfo_moves *m, int r, uint64_t sum)
{
	bool moved;

	if (r < 0) {
		m->checks = 0;		/* the next ones start over */
		return true;
	}
	moved = m->checks < 2 || sum != m->last[0] || m->last[0] != m->last[1];
	m->last[1] = m->last[0];
	m->last[0] = sum;
	if (m->checks < 2)
		m->checks++;
	return moved;
}

bool sysinfo_pages_may_have_moved(struct sysinfo_moves *m, const char *procfs)
{
	_cleanup_free_ char *text = NULL;
	uint64_t sum = 0;
	int r;

	/* about 5 KiB, read in one go: the kernel sums its counters at each read() */
	r = read_file_at(procfs, "vmstat", 1024 * 1024, &text, NULL);
	if (r == 0)
		r = sysinfo_parse_moves(text, &sum);
	return sysinfo_moves_step(m, r, sum);
}

uint64_t sysinfo_random_u64(void)
{
	uint64_t v = 0;

	while (v == 0) {
		if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
			/* early boot without entropy: mix clocks, good enough for an id */
			struct timespec a, b;

			clock_gettime(CLOCK_REALTIME, &a);
			clock_gettime(CLOCK_MONOTONIC, &b);
			v = ((uint64_t)a.tv_nsec << 32) ^ (uint64_t)a.tv_sec ^
			    ((uint64_t)b.tv_nsec * 0x9e3779b97f4a7c15ull) ^ (uint64_t)getpid();
		}
	}
	return v;
}
