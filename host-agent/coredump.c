// SPDX-License-Identifier: MIT
/* coredump.c - a guest's ELF core, read as hostile input (see coredump.h). */
#include "coredump.h"

#include <elf.h>
#include <errno.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "le.h"

typedef struct {
	uint64_t paddr, offset, size;	/* size: file bytes (p_filesz) */
} Load;

typedef struct {
	char name[32];
	uint32_t type;
	size_t off, len;	/* the descriptor, in @notes */
} Note;

struct _HaCore {
	int fd;			/* -1: @mem */
	const uint8_t *mem;
	uint64_t size;		/* the file's (or buffer's) length */
	GArray *loads;		/* Load, sorted by paddr, not overlapping */
	GArray *notes;		/* Note */
	uint8_t *note_bytes;	/* every PT_NOTE's bytes, one after the other */
	size_t note_len;
	guint last;		/* the segment the last read hit (reads are local) */
	uint64_t bytes_read;	/* by file_read() */
};

static uint16_t le16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return GUINT16_FROM_LE(v);
}

/* @len bytes of the file at @off: false when they are not all there. */
static bool file_read(HaCore *c, uint64_t off, void *buf, size_t len)
{
	if (off > c->size || len > c->size - off)
		return false;
	c->bytes_read += len;
	if (c->fd < 0) {
		memcpy(buf, c->mem + off, len);
		return true;
	}
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(c->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;	/* truncated under us, or an I/O error */
		done += (size_t)n;
	}
	return true;
}

static int cmp_load(const void *a, const void *b)
{
	const Load *x = a, *y = b;

	return x->paddr < y->paddr ? -1 : x->paddr > y->paddr;
}

/* Split one PT_NOTE segment's bytes, note_bytes[@off, @end), into notes: 4-byte
 * aligned name and descriptor, each inside the segment, bounded in number. */
static bool parse_notes(HaCore *c, size_t off, size_t end, GError **error)
{
	while (end - off >= 12) {
		const uint8_t *h = c->note_bytes + off;
		uint32_t namesz = ha_le32(h), descsz = ha_le32(h + 4);
		size_t nalign = ((size_t)namesz + 3) & ~(size_t)3;
		size_t dalign = ((size_t)descsz + 3) & ~(size_t)3;
		Note n = { .type = ha_le32(h + 8) };

		off += 12;
		if (nalign > end - off || dalign > end - off - nalign) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "a note runs past its segment (name %u, descriptor %u bytes)",
				    namesz, descsz);
			return false;
		}
		if (c->notes->len >= HA_CORE_MAX_NOTES) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "more than %d notes", HA_CORE_MAX_NOTES);
			return false;
		}
		/* the name without its NUL, cut at the first NUL, at most 31 bytes */
		memcpy(n.name, c->note_bytes + off,
		       MIN(strnlen((const char *)c->note_bytes + off, namesz), sizeof(n.name) - 1));
		n.off = off + nalign;
		n.len = descsz;
		g_array_append_val(c->notes, n);
		off += nalign + dalign;
	}
	return true;
}

static bool core_parse(HaCore *c, GError **error)
{
	uint8_t eh[64], ph[56];
	uint64_t phoff, total_notes = 0;
	uint32_t phnum;
	uint16_t phentsize;

	if (!file_read(c, 0, eh, sizeof(eh))) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "shorter than an ELF header (%" PRIu64 " bytes)", c->size);
		return false;
	}
	if (memcmp(eh, ELFMAG, SELFMAG) || eh[EI_CLASS] != ELFCLASS64 ||
	    eh[EI_DATA] != ELFDATA2LSB || le16(eh + 16) != ET_CORE ||
	    le16(eh + 18) != EM_X86_64) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "not an x86-64 little-endian ELF core");
		return false;
	}
	phoff = ha_le64(eh + 32);
	phentsize = le16(eh + 54);
	phnum = le16(eh + 56);
	if (phentsize != sizeof(ph)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "program header size %u, not %zu", phentsize, sizeof(ph));
		return false;
	}
	if (phnum == PN_XNUM) {
		/* more than 65534 segments: the count is section header 0's sh_info */
		uint64_t shoff = ha_le64(eh + 40);
		uint8_t sh[64];

		if (le16(eh + 58) != sizeof(sh) || !file_read(c, shoff, sh, sizeof(sh))) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "PN_XNUM without a readable section header 0");
			return false;
		}
		phnum = ha_le32(sh + 44);
	}
	if (phnum == 0 || phnum > HA_CORE_MAX_PHDRS) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "%u program headers (1 to %d)", phnum, HA_CORE_MAX_PHDRS);
		return false;
	}
	if (phoff > c->size || (uint64_t)phnum * sizeof(ph) > c->size - phoff) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "the program header table is not in the file");
		return false;
	}
	for (uint32_t i = 0; i < phnum; i++) {
		uint32_t type;
		uint64_t off, filesz, paddr;

		if (!file_read(c, phoff + (uint64_t)i * sizeof(ph), ph, sizeof(ph))) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "cannot read program header %u", i);
			return false;
		}
		type = ha_le32(ph);
		off = ha_le64(ph + 8);
		paddr = ha_le64(ph + 24);
		filesz = ha_le64(ph + 32);
		if (type != PT_LOAD && type != PT_NOTE)
			continue;
		if (off > c->size || filesz > c->size - off) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "segment %u (%" PRIu64 " bytes at %" PRIu64 ") is not in"
				    " the file (%" PRIu64 " bytes): a truncated dump?", i,
				    filesz, off, c->size);
			return false;
		}
		if (type == PT_NOTE) {
			if (filesz > HA_CORE_MAX_NOTES_BYTES - total_notes) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
					    "notes over %u bytes", HA_CORE_MAX_NOTES_BYTES);
				return false;
			}
			total_notes += filesz;
			c->note_bytes = g_realloc(c->note_bytes, total_notes ? total_notes : 1);
			if (!file_read(c, off, c->note_bytes + c->note_len, filesz)) {
				g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
					    "cannot read the notes of segment %u", i);
				return false;
			}
			c->note_len = total_notes;
			/* each segment's notes alone: a note never spans two */
			if (!parse_notes(c, total_notes - filesz, total_notes, error))
				return false;
			continue;
		}
		if (filesz == 0)
			continue;
		if (paddr > UINT64_MAX - filesz) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "segment %u wraps physical memory", i);
			return false;
		}
		g_array_append_val(c->loads, ((Load){ paddr, off, filesz }));
	}
	if (c->loads->len == 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "no memory in the core (no PT_LOAD with bytes)");
		return false;
	}
	g_array_sort(c->loads, cmp_load);
	for (guint i = 1; i < c->loads->len; i++) {
		const Load *a = &g_array_index(c->loads, Load, i - 1);
		const Load *b = &g_array_index(c->loads, Load, i);

		if (b->paddr < a->paddr + a->size) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "memory segments overlap at physical 0x%" PRIx64, b->paddr);
			return false;
		}
	}
	return true;
}

static HaCore *core_new(int fd, const void *mem, uint64_t size, GError **error)
{
	HaCore *c = g_new0(HaCore, 1);

	c->fd = fd;
	c->mem = mem;
	c->size = size;
	c->loads = g_array_new(FALSE, FALSE, sizeof(Load));
	c->notes = g_array_new(FALSE, FALSE, sizeof(Note));
	if (!core_parse(c, error)) {
		ha_core_free(c);
		return NULL;
	}
	return c;
}

HaCore *ha_core_open_fd(int fd, GError **error)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "not a regular file: %s",
			    g_strerror(errno));
		return NULL;
	}
	return core_new(fd, NULL, (uint64_t)st.st_size, error);
}

HaCore *ha_core_open_mem(const void *buf, size_t len, GError **error)
{
	return core_new(-1, buf, len, error);
}

void ha_core_free(HaCore *c)
{
	if (!c)
		return;
	g_array_unref(c->loads);
	g_array_unref(c->notes);
	g_free(c->note_bytes);
	g_free(c);
}

const uint8_t *ha_core_note(const HaCore *c, const char *name, uint32_t type, size_t *len)
{
	for (guint i = 0; i < c->notes->len; i++) {
		const Note *n = &g_array_index(c->notes, Note, i);

		if (n->type == type && strcmp(n->name, name) == 0) {
			*len = n->len;
			return c->note_bytes + n->off;
		}
	}
	return NULL;
}

/* The segment that holds @paddr, or NULL (binary search, the last hit first). */
static const Load *find_load(HaCore *c, uint64_t paddr)
{
	const Load *l = &g_array_index(c->loads, Load, c->last);
	guint lo = 0, hi = c->loads->len;

	if (paddr >= l->paddr && paddr - l->paddr < l->size)
		return l;
	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;

		l = &g_array_index(c->loads, Load, mid);
		if (paddr < l->paddr) {
			hi = mid;
		} else if (paddr - l->paddr >= l->size) {
			lo = mid + 1;
		} else {
			c->last = mid;
			return l;
		}
	}
	return NULL;
}

bool ha_core_read_phys(HaCore *c, uint64_t paddr, void *buf, size_t len)
{
	const Load *l = find_load(c, paddr);

	if (!l || len > l->size - (paddr - l->paddr))
		return false;
	return file_read(c, l->offset + (paddr - l->paddr), buf, len);
}

uint64_t ha_core_ram_bytes(const HaCore *c)
{
	uint64_t n = 0;

	for (guint i = 0; i < c->loads->len; i++)
		n += g_array_index(c->loads, Load, i).size;
	return n;
}

guint ha_core_nr_loads(const HaCore *c)
{
	return c->loads->len;
}

uint64_t ha_core_bytes_read(const HaCore *c)
{
	return c->bytes_read;
}
