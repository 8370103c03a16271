// SPDX-License-Identifier: MIT
/* resolve-dwarf.c - libdwfl lookups (see resolve-dwarf.h). */
#include "resolve-dwarf.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

struct _HaDwarf {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GHashTable *enums;	/* enumerator name -> int64_t value, built on first use */
};

static const Dwfl_Callbacks callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

HaDwarf *ha_dwarf_open(const char *path, GError **error)
{
	HaDwarf *d = g_new0(HaDwarf, 1);

	d->dwfl = dwfl_begin(&callbacks);
	if (d->dwfl)
		d->mod = dwfl_report_offline(d->dwfl, "vmlinux", path, -1);
	if (!d->dwfl || !d->mod || dwfl_report_end(d->dwfl, NULL, NULL) != 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: %s", path,
			    dwfl_errmsg(-1));
		ha_dwarf_free(d);
		return NULL;
	}
	return d;
}

void ha_dwarf_free(HaDwarf *d)
{
	if (!d)
		return;
	if (d->dwfl)
		dwfl_end(d->dwfl);
	if (d->enums)
		g_hash_table_destroy(d->enums);
	g_free(d);
}

int ha_dwarf_build_id(HaDwarf *d, const uint8_t **ret_bits)
{
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(d->mod, &bits, &vaddr);

	if (n <= 0)
		return 0;
	*ret_bits = bits;
	return n;
}

uint64_t ha_dwarf_symbol(HaDwarf *d, const char *name)
{
	int n = dwfl_module_getsymtab(d->mod);

	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(d->mod, i, &sym, &addr, NULL, NULL, NULL);

		if (s && strcmp(s, name) == 0)
			return addr;
	}
	return 0;
}

static const char *file_of(Dwarf_Die *cudie, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t nfiles;

	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : (path ? path : "?");
}

char **ha_dwarf_lookup(HaDwarf *d, uint64_t addr)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(d->mod, addr, &bias);
	Dwfl_Line *line = dwfl_module_getsrc(d->mod, addr);
	Dwarf_Die *scopes = NULL;
	GPtrArray *out;
	const char *file = NULL;
	int lineno = 0, n;

	if (!cudie || !line)
		return NULL;
	file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	out = g_ptr_array_new();
	n = dwarf_getscopes(cudie, addr - bias, &scopes);
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		const char *name;
		Dwarf_Attribute a;
		Dwarf_Word cf = 0, cl = 0;
		Dwarf_Die inl, *outer = NULL;
		int m;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		name = dwarf_diename(&scopes[i]);
		g_ptr_array_add(out, g_strdup_printf("%s%s (%s:%d)", name ? name : "??",
			tag == DW_TAG_inlined_subroutine ? " [inlined]" : "", base(file), lineno));
		if (tag != DW_TAG_inlined_subroutine || out->len >= 64)
			break;
		/* The caller's location is where this one was inlined ... */
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &cf) == 0 &&
		    dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl) == 0) {
			file = file_of(cudie, cf);
			lineno = (int)cl;
		}
		/* ... and the scopes after an inlined instance are its abstract origin's:
		 * continue with the scopes that contain the instance itself. */
		inl = scopes[i];
		m = dwarf_getscopes_die(&inl, &outer);
		free(scopes);
		scopes = outer;
		n = m;
		i = 0;	/* outer[0] is the instance itself */
	}
	free(scopes);
	if (!out->len)
		g_ptr_array_add(out, g_strdup_printf("?? (%s:%d)", base(file), lineno));
	g_ptr_array_add(out, NULL);
	return (char **)g_ptr_array_free(out, FALSE);
}

/* Enumerators of the enumeration types among @die's children, and one level into
 * structures and unions (where anonymous enums often sit). */
static void collect_enums(GHashTable *h, Dwarf_Die *die, int depth)
{
	Dwarf_Die c;

	if (dwarf_child(die, &c) != 0)
		return;
	do {
		int tag = dwarf_tag(&c);

		if (tag == DW_TAG_enumeration_type) {
			Dwarf_Die e;

			if (dwarf_child(&c, &e) != 0)
				continue;
			do {
				Dwarf_Attribute a;
				Dwarf_Sword v;
				const char *name = dwarf_diename(&e);

				if (dwarf_tag(&e) != DW_TAG_enumerator || !name ||
				    g_hash_table_contains(h, name) ||
				    dwarf_formsdata(dwarf_attr(&e, DW_AT_const_value, &a), &v) != 0)
					continue;
				g_hash_table_insert(h, g_strdup(name), g_memdup2(&v, sizeof(v)));
			} while (dwarf_siblingof(&e, &e) == 0);
		} else if (depth == 0 && (tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
					  tag == DW_TAG_typedef)) {
			collect_enums(h, &c, depth + 1);
		}
	} while (dwarf_siblingof(&c, &c) == 0);
}

bool ha_dwarf_enum(HaDwarf *d, const char *name, int64_t *ret)
{
	const int64_t *v;

	if (!d->enums) {
		Dwarf_Addr bias;
		Dwarf *dw = dwfl_module_getdwarf(d->mod, &bias);
		Dwarf_Off off = 0, next;
		size_t hsize;

		d->enums = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
			Dwarf_Die cu;

			if (dwarf_offdie(dw, off + hsize, &cu))
				collect_enums(d->enums, &cu, 0);
			off = next;
		}
	}
	v = g_hash_table_lookup(d->enums, name);
	if (!v)
		return false;
	*ret = *v;
	return true;
}
