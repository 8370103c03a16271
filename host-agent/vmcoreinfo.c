// SPDX-License-Identifier: MIT
/* vmcoreinfo.c - parse the guest's VMCOREINFO text (see vmcoreinfo.h). */
#include "vmcoreinfo.h"

#include <errno.h>
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

struct _HaVmci {
	GHashTable *kv;		/* key -> value, both owned */
};

HaVmci *ha_vmci_parse(const void *text, size_t len, GError **error)
{
	g_autoptr(HaVmci) v = g_new0(HaVmci, 1);
	const char *p = text, *end = p + len;

	v->kv = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	if (len > HA_VMCI_MAX_BYTES) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "VMCOREINFO of %zu bytes (at most %u)", len, HA_VMCI_MAX_BYTES);
		return NULL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(le - p));

		if (g_hash_table_size(v->kv) >= HA_VMCI_MAX_LINES) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "VMCOREINFO of more than %d lines", HA_VMCI_MAX_LINES);
			return NULL;
		}
		/* a line with a NUL ends the text (the note's padding) */
		if (memchr(p, '\0', (size_t)(le - p)))
			break;
		if (eq && eq > p) {
			char *k = g_strndup(p, (gsize)(eq - p));

			if (!g_hash_table_contains(v->kv, k))
				g_hash_table_insert(v->kv, k,
						    g_strndup(eq + 1, (gsize)(le - eq - 1)));
			else
				g_free(k);
		}
		p = nl ? nl + 1 : end;
	}
	if (g_hash_table_size(v->kv) == 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "VMCOREINFO has no KEY=VALUE line");
		return NULL;
	}
	return g_steal_pointer(&v);
}

void ha_vmci_free(HaVmci *v)
{
	if (!v)
		return;
	if (v->kv)
		g_hash_table_unref(v->kv);
	g_free(v);
}

const char *ha_vmci_get(const HaVmci *v, const char *key)
{
	return g_hash_table_lookup(v->kv, key);
}

/* The whole of @s as a number in @base: no sign unless @sign, no trailing bytes. */
static bool parse_num(const char *s, int base, bool sign, uint64_t *ret)
{
	char *end;
	uint64_t u;

	if (!s || !*s || (!sign && *s == '-') || g_ascii_isspace(*s))
		return false;
	errno = 0;
	u = sign ? (uint64_t)g_ascii_strtoll(s, &end, base) : g_ascii_strtoull(s, &end, base);
	if (errno || *end)
		return false;
	*ret = u;
	return true;
}

/* "@kind(@name)"'s value */
static bool lookup(const HaVmci *v, const char *kind, const char *name, int base, bool sign,
		   uint64_t *ret)
{
	g_autofree char *k = g_strconcat(kind, "(", name, ")", NULL);

	return parse_num(ha_vmci_get(v, k), base, sign, ret);
}

bool ha_vmci_symbol(const HaVmci *v, const char *name, uint64_t *ret)
{
	return lookup(v, "SYMBOL", name, 16, false, ret);
}

bool ha_vmci_offset(const HaVmci *v, const char *name, uint64_t *ret)
{
	return lookup(v, "OFFSET", name, 10, false, ret);
}

bool ha_vmci_size(const HaVmci *v, const char *name, uint64_t *ret)
{
	return lookup(v, "SIZE", name, 10, false, ret);
}

bool ha_vmci_number(const HaVmci *v, const char *name, int64_t *ret)
{
	return lookup(v, "NUMBER", name, 10, true, (uint64_t *)ret);
}

bool ha_vmci_hex(const HaVmci *v, const char *key, uint64_t *ret)
{
	return parse_num(ha_vmci_get(v, key), 16, false, ret);
}

guint ha_vmci_nr_lines(const HaVmci *v)
{
	return g_hash_table_size(v->kv);
}
