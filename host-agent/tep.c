// SPDX-License-Identifier: MIT
/*
 * tep.c - libtraceevent glue (see tep.h).
 *
 * libtraceevent's kbuffer trusts the page it walks: a data event of type_len 0 whose
 * length word is below 4, or a padding event with a negative length, moves its cursor
 * backwards (an endless loop), and no length is checked against the page. So before a
 * page goes to kbuffer, layout_ok() walks the same event headers and only checks that
 * every event moves forward and ends inside the committed bytes, mirroring kbuffer's
 * own length rules (libtraceevent 1.7, kbuffer-parse.c translate_data()). That check
 * already finds where each data event lies and its time stamp, by kbuffer's rules, so
 * it keeps them (PageEv) and the walk delivers them: kbuffer itself now only reads the
 * page header (kbuffer_load_subbuffer(): the lost-events count). Walking the page a
 * second time in kbuffer cost 14 % of the ingest's CPU (issue 14 seventh round);
 * ha_tep_walk_page_kbuffer() still walks it with kbuffer, and test-tep and fuzz-page
 * check that both give the same events. The fields of each event are read at the
 * offsets libtraceevent parsed from the formats, looked up once (fill_event()).
 *
 * libtraceevent 1.7's format parser also dereferences NULL on some texts that pass
 * every check below (fuzz-format finds them within minutes). So each text is parsed in
 * a sandboxed child first (sandbox.h): the child is a copy of this very parser, parses
 * the text the way the parent is about to, prints an event of it, and says whether
 * libtraceevent accepted it whole; only then does the parent parse it. A child that
 * dies refuses the text. Parsing a text depends on nothing but the text (as
 * printfmt.h rewrote it), the event name and the guest's long size and byte order
 * (libtraceevent looks up no state of the handle but its print functions, which every
 * HaTep registers alike), so the verdict is cached per process under a hash of those:
 * a guest's formats cost one child each per daemon, not per boot or session.
 */
#include "tep.h"

#include <gio/gio.h>
#include <string.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include "printfmt.h"
#include "sandbox.h"

#define COMMIT_MASK	((1u << 27) - 1)	/* kbuffer and 6.1 ring_buffer.c */
#define PAGE_SLACK	64u			/* zeros after the page: lost-events word */

/* Where a field lies in an event's data; size 0: no such field (or not readable). */
typedef struct {
	uint32_t off;
	uint32_t size;			/* 1, 2, 4 or 8 */
} FieldAt;

enum { COMMON_TYPE, COMMON_PID, COMMON_FLAGS, COMMON_PREEMPT, COMMON_NR };

static const char *const common_names[COMMON_NR] = {
	[COMMON_TYPE] = "common_type", [COMMON_PID] = "common_pid",
	[COMMON_FLAGS] = "common_flags", [COMMON_PREEMPT] = "common_preempt_count",
};

/* A data event of the page being walked, as kbuffer would deliver it. */
typedef struct {
	uint64_t ts;
	uint32_t off;			/* of its data, from the page's start */
	uint32_t size;			/* kbuffer_event_size() */
} PageEv;

struct _HaTep {
	struct tep_handle *tep;
	struct kbuffer *kbuf;
	uint32_t page_size;
	bool big_endian;
	bool have_header;
	int long_size;
	uint8_t *page;			/* page_size + PAGE_SLACK, zero padded */
	size_t page_used;
	PageEv *evs;			/* the page's data events (layout_ok()) */
	uint32_t nr_evs, evs_cap;
	struct tep_event *ev_stack_id;
	struct tep_event *ev_kstack;
	/* what fill_event() reads per event, looked up once (see there) */
	FieldAt sid_at;			/* ftrace/stack_id's stack_id */
	FieldAt ksize_at;		/* ftrace/kernel_stack's size ... */
	uint32_t kcaller_off;		/* ... and where its caller[] starts */
	bool have_common;
	FieldAt common[COMMON_NR];
	uint64_t ips[HA_KSTACK_MAX];
	long missed;
	GHashTable *names;		/* int id -> "sys/name" (owned) */
	GHashTable *known;		/* "sys/name" of every text accepted (owned) */
	GHashTable *refused_ids;	/* int id -> "sys/name" of a refused text (owned) */
	uint32_t nr_parsed;		/* texts handed to libtraceevent, accepted or not */
	size_t parsed_bytes;		/* ... and their bytes: the budget (tep.h) */
	HaEnumFn enum_fn;		/* printfmt.h, may be NULL */
	void *enum_user;
	HaSymbolizeFn sym_fn;		/* %pS and friends, may be NULL */
	void *sym_user;
	unsigned int raw_fields;	/* fields printfmt made raw */
	uint32_t nr_killed;		/* sandboxed parses that died (HA_TEP_KILLED_MAX) */
};

/* The HaTep whose event tep_print_event() is printing: libtraceevent's print
 * functions get no context pointer. Set by ha_tep_format_event() only. */
static __thread HaTep *printing;

static unsigned long long print_raw(struct trace_seq *s, unsigned long long *args)
{
	trace_seq_printf(s, "0x%llx(raw)", args[0]);
	return 0;
}

static unsigned long long print_unknown(struct trace_seq *s, unsigned long long *args)
{
	(void)args;
	trace_seq_puts(s, "(unknown)");
	return 0;
}

static void print_sym(struct trace_seq *s, unsigned long long ip, char conv)
{
	g_autofree char *f = NULL;

	if (printing && printing->sym_fn)
		f = printing->sym_fn((uint64_t)ip, conv, printing->sym_user);
	if (f)
		trace_seq_puts(s, f);
	else
		trace_seq_printf(s, "0x%llx", ip);
}

#define SYM_PRINTER(c)								\
	static unsigned long long print_sym_##c(struct trace_seq *s,		\
						unsigned long long *args)	\
	{									\
		print_sym(s, args[0], #c[0]);					\
		return 0;							\
	}
SYM_PRINTER(S)
SYM_PRINTER(s)
SYM_PRINTER(B)
SYM_PRINTER(F)
SYM_PRINTER(f)

static void register_printers(struct tep_handle *tep)
{
	static const struct {
		const char *name;
		tep_func_handler fn;
	} fns[] = {
		{ "__ha_raw", print_raw }, { "__ha_unknown", print_unknown },
		{ "__ha_sym_S", print_sym_S },
		{ "__ha_sym_s", print_sym_s }, { "__ha_sym_B", print_sym_B },
		{ "__ha_sym_F", print_sym_F }, { "__ha_sym_f", print_sym_f },
	};

	for (unsigned int i = 0; i < G_N_ELEMENTS(fns); i++)
		tep_register_print_function(tep, fns[i].fn, TEP_FUNC_ARG_STRING,
					    (char *)fns[i].name, TEP_FUNC_ARG_LONG,
					    TEP_FUNC_ARG_VOID);
}

HaTep *ha_tep_new(uint32_t page_size, bool big_endian)
{
	HaTep *t = g_new0(HaTep, 1);

	t->tep = tep_alloc();
	t->page_size = page_size;
	t->big_endian = big_endian;
	t->long_size = 8;
	tep_set_long_size(t->tep, 8);
	tep_set_page_size(t->tep, (int)page_size);
	tep_set_file_bigendian(t->tep, big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	t->page = g_malloc0(page_size + PAGE_SLACK);
	t->names = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	t->known = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	t->refused_ids = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	register_printers(t->tep);
	return t;
}

void ha_tep_free(HaTep *t)
{
	if (!t)
		return;
	if (t->kbuf)
		kbuffer_free(t->kbuf);
	tep_free(t->tep);
	g_hash_table_destroy(t->names);
	g_hash_table_destroy(t->known);
	g_hash_table_destroy(t->refused_ids);
	g_free(t->page);
	g_free(t->evs);
	g_free(t);
}

bool ha_tep_ready(const HaTep *t)
{
	return t->have_header && (t->ev_stack_id || t->ev_kstack);
}

/* "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:N;" with nothing after it: a field line
 * as 6.1's f_show() and ring_buffer_print_page_header() print it, whole. */
static bool field_line_ok(const char *l, size_t n)
{
	static const char *const keys[] = { "\toffset:", "\tsize:", "\tsigned:" };
	const char *end = l + n, *p;

	if (n < 7 || memcmp(l, "\tfield:", 7))
		return false;
	p = memchr(l + 7, ';', (size_t)(end - l - 7));
	if (!p || p == l + 7)
		return false;
	/* a C declaration as ftrace prints them: "unsigned long caller[8]", "const char *
	 * name", "__data_loc char[] msg"; libtraceevent leaks on other punctuation */
	for (const char *d = l + 7, *open = NULL; d < p; d++) {
		if (*d == '[') {
			if (open)
				return false;
			open = d;
		} else if (*d == ']') {
			if (!open)
				return false;
			open = NULL;
		} else if (!g_ascii_isalnum(*d) && !strchr("_ *", *d)) {
			return false;
		}
		if (d == p - 1 && open)
			return false;
	}
	p++;
	for (int k = 0; k < 3; k++) {
		size_t kl = strlen(keys[k]);
		const char *d;

		if ((size_t)(end - p) < kl || memcmp(p, keys[k], kl))
			return false;
		p += kl;
		if (p < end && *p == '-' && k == 2)
			p++;
		d = p;
		while (p < end && g_ascii_isdigit(*p))
			p++;
		if (p == d || p - d > 10 || p >= end || *p != ';')
			return false;
		p++;
	}
	return p == end;
}

/*
 * A print fmt line's value as 6.1 writes one: a string literal, then arguments whose
 * string and character literals are closed and whose ( ) [ ] { } nest and balance.
 * libtraceevent 1.7 dereferences NULL on some unbalanced argument lists (a
 * __print_flags() table cut short), so a text gets there only when this holds.
 */
static bool print_fmt_ok(const char *p, size_t n)
{
	static const char *const tables[] = { "__print_flags", "__print_symbolic",
					      "__print_flags_u64", "__print_symbolic_u64" };
	char stack[64];
	bool table[64];		/* a ( of one of @tables: { } tables allowed inside */
	unsigned int depth = 0;
	bool first = true;

	if (!n || *p != '"')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];

		if (ch == '"' || ch == '\'') {
			for (i++; i < n && p[i] != ch; i++)
				if (p[i] == '\\')
					i++;
			if (i >= n)
				return false;
			first = false;
			continue;
		}
		if (first)
			return false;
		if (ch == '(' || ch == '[' || ch == '{') {
			bool in_table = false;

			if (depth == sizeof(stack))
				return false;
			for (unsigned int d = 0; d < depth; d++)
				in_table |= table[d];
			/* libtraceevent 1.7 dereferences NULL on a { } table that is not
			 * an argument of __print_flags() or __print_symbolic() */
			if (ch == '{' && !in_table)
				return false;
			table[depth] = false;
			if (ch == '(') {
				size_t e = i, b;

				while (e > 0 && p[e - 1] == ' ')
					e--;
				for (b = e; b > 0 && (g_ascii_isalnum(p[b - 1]) || p[b - 1] == '_'); b--)
					;
				for (unsigned int k = 0; k < G_N_ELEMENTS(tables); k++)
					if (e - b == strlen(tables[k]) &&
					    !memcmp(p + b, tables[k], e - b))
						table[depth] = true;
			}
			stack[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
		} else if (ch == ')' || ch == ']' || ch == '}') {
			if (!depth || stack[--depth] != ch)
				return false;
		}
	}
	return depth == 0;
}

/*
 * Is @text a whole event format file of event @event, the way 6.1 writes one? Lines
 * "name: EVENT", "ID: N", "format:", whole field lines (field_line_ok()) and empty
 * lines, then a last line "print fmt: ..." ending in a newline. libtraceevent 1.7
 * accepts texts cut inside a field declaration (and leaks the token it stopped at),
 * so a text must pass this before it gets there. *ret_fields: its field lines.
 */
/* The field name of a whole field line: the last word of its declaration. */
static char *field_name(const char *l)
{
	const char *e = strchr(l + 7, ';'), *b;

	if (memchr(l + 7, '[', (size_t)(e - l - 7)))
		e = memchr(l + 7, '[', (size_t)(e - l - 7));
	while (e > l + 7 && e[-1] == ' ')
		e--;
	for (b = e; b > l + 7 && (g_ascii_isalnum(b[-1]) || b[-1] == '_'); b--)
		;
	return g_strndup(b, (size_t)(e - b));
}

/* Every REC->name of a print fmt names a field: libtraceevent 1.7 dereferences NULL
 * on an unknown one inside __print_flags(). */
static bool print_fields_ok(const char *p, size_t n, GHashTable *names)
{
	for (const char *q = p, *end = p + n; (q = g_strstr_len(q, end - q, "REC->")); ) {
		const char *b = q + 5, *e = b;
		g_autofree char *id = NULL;

		while (e < end && (g_ascii_isalnum(*e) || *e == '_'))
			e++;
		id = g_strndup(b, (size_t)(e - b));
		if (!g_hash_table_contains(names, id))
			return false;
		q = e;
	}
	return true;
}

static bool format_whole(const char *text, size_t len, const char *event, int *ret_fields,
			 const char **ret_why)
{
	size_t off = 0;
	bool name = false, id = false, format = false;
	int fields = 0;
	g_autoptr(GHashTable) names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
							    NULL);

	*ret_why = "it does not end with a newline";
	if (!len || text[len - 1] != '\n')
		return false;
	/* printable ASCII, tabs and newlines only: libtraceevent stops at a NUL */
	*ret_why = "it has a byte that is not printable ASCII";
	for (size_t i = 0; i < len; i++)
		if ((text[i] < 0x20 || text[i] > 0x7e) && text[i] != '\t' && text[i] != '\n')
			return false;
	while (off < len) {
		const char *l = text + off;
		const char *nl = memchr(l, '\n', len - off);
		size_t n = (size_t)(nl - l);

		off += n + 1;
		if (!format) {
			if (!name && n > 6 && !memcmp(l, "name: ", 6)) {
				*ret_why = "its name is not the FORMAT frame's";
				if (n - 6 != strlen(event) || memcmp(l + 6, event, n - 6))
					return false;
				name = true;
			} else if (name && !id && n > 4 && !memcmp(l, "ID: ", 4)) {
				id = true;
			} else if (id && n == 7 && !memcmp(l, "format:", 7)) {
				format = true;
			} else {
				*ret_why = "no 'name:', 'ID:' and 'format:' lines at its start";
				return false;
			}
		} else if (n == 0) {
			continue;
		} else if (n > 11 && !memcmp(l, "print fmt: ", 11)) {
			*ret_why = "'print fmt:' is not its last line";
			if (off != len || !fields)
				return false;
			*ret_why = "its print fmt is cut (a literal or a bracket left open)";
			if (!print_fmt_ok(l + 11, n - 11))
				return false;
			*ret_why = "its print fmt names a field it does not declare";
			if (!print_fields_ok(l + 11, n - 11, names))
				return false;
			*ret_fields = fields;
			return true;
		} else if (!field_line_ok(l, n)) {
			*ret_why = "a field line is cut or malformed";
			return false;
		} else {
			g_hash_table_add(names, field_name(l));
			fields++;
		}
	}
	*ret_why = "no 'print fmt:' line at its end";
	return false;
}

/* ---- the sandboxed parse --------------------------------------------------------- */

static bool fields_fit(HaTep *t, struct tep_event *te, const HaEvent *ev);

typedef enum {
	PARSE_OK = 0,		/* libtraceevent accepted the whole text */
	PARSE_REFUSED,		/* it returned an error */
	PARSE_PARTIAL,		/* it accepted fewer fields, or another event name */
	PARSE_KILLED,		/* the child died (crash, forbidden call, CPU time) */
} ParseVerdict;

typedef struct {
	HaTep *t;
	const char *sys;	/* NULL: header_page */
	const char *event;
	const char *text;	/* NUL-terminated copy for header_page */
	size_t len;
	int nfields;		/* field lines format_whole() counted */
} ParseJob;

static G_LOCK_DEFINE(verdicts);
static GHashTable *verdicts;	/* hash (cache_key()) -> ParseVerdict + 1 | signal << 8 */

/* Print one event of @ev from a record of zeros, then one of a byte pattern, as a
 * report would: libtraceevent's printer walks the print fmt arguments it parsed. */
static void print_probe(HaTep *t, struct tep_event *ev)
{
	static uint8_t rec[HA_TEP_PROBE_RECORD];
	struct tep_format_field *common = tep_find_common_field(ev, "common_type");
	uint32_t size = 8;

	for (int pass = 0; pass < 2; pass++) {
		HaEvent e = { .type = ev->id, .data = rec };
		struct trace_seq s;
		struct tep_record r;

		for (struct tep_format_field *f = ev->format.fields; f; f = f->next)
			if (f->offset >= 0 && f->size >= 0 &&
			    (uint64_t)f->offset + (uint64_t)f->size > size)
				size = (uint32_t)MIN((uint64_t)f->offset + (uint64_t)f->size,
						     sizeof(rec));
		for (uint32_t i = 0; i < size; i++)
			rec[i] = pass ? (uint8_t)(i * 37) : 0;
		if (common && common->offset == 0 && common->size == 2)
			memcpy(rec, &(uint16_t){ (uint16_t)ev->id }, 2);
		e.size = size;
		if (!fields_fit(t, ev, &e))
			continue;
		r = (struct tep_record){ .data = rec, .size = (int)size };
		trace_seq_init(&s);
		tep_print_event(t->tep, &s, &r, "%s", TEP_PRINT_INFO);
		trace_seq_destroy(&s);
	}
}

/* In the child: what the parent is about to do, on its exact copy of the parser. */
static int parse_in_child(void *arg)
{
	const ParseJob *j = arg;
	struct tep_event *ev = NULL;

	tep_set_loglevel(TEP_LOG_NONE);	/* it may not write: its warnings go */
	if (!j->sys)
		return tep_parse_header_page(j->t->tep, (char *)j->text, j->len,
					     j->t->long_size) ? PARSE_REFUSED : PARSE_OK;
	if (tep_parse_format(j->t->tep, &ev, j->text, j->len, j->sys) != TEP_ERRNO__SUCCESS ||
	    !ev)
		return PARSE_REFUSED;
	if (ev->format.nr_common + ev->format.nr_fields != j->nfields ||
	    g_strcmp0(ev->name, j->event))
		return PARSE_PARTIAL;
	print_probe(j->t, ev);
	return PARSE_OK;
}

static char *cache_key(const ParseJob *j)
{
	g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
	const uint8_t geometry[2] = { (uint8_t)j->t->long_size, j->t->big_endian };

	g_checksum_update(ck, geometry, sizeof(geometry));
	g_checksum_update(ck, (const guchar *)(j->sys ? j->sys : ""), -1);
	g_checksum_update(ck, (const guchar *)"/", 1);
	g_checksum_update(ck, (const guchar *)j->event, -1);
	g_checksum_update(ck, (const guchar *)"", 1);
	g_checksum_update(ck, (const guchar *)j->text, (gssize)j->len);
	return g_strdup(g_checksum_get_string(ck));
}

static const char *verdict_text(ParseVerdict v)
{
	return v == PARSE_REFUSED ? "refused by libtraceevent" :
	       v == PARSE_PARTIAL ? "parsed only in part by libtraceevent" :
	       "libtraceevent's parser died on it";
}

/*
 * May the parent hand @j's text to libtraceevent? True when the sandboxed parse
 * accepted it whole. False with @error (G_IO_ERROR_INVALID_DATA) when libtraceevent
 * refused it, took it only in part or died on it; G_IO_ERROR_FAILED when no sandbox
 * could run (not the text's fault: not cached, not charged).
 */
static bool sandbox_ok(const ParseJob *j, const char *name, GError **error)
{
	g_autofree char *key = cache_key(j);
	g_autoptr(GError) e = NULL;
	gpointer v;
	int code = 0;
	ParseVerdict verdict;

	G_LOCK(verdicts);
	if (!verdicts)
		verdicts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	v = g_hash_table_lookup(verdicts, key);
	G_UNLOCK(verdicts);
	if (v) {
		verdict = (ParseVerdict)(GPOINTER_TO_UINT(v) - 1);
		if (verdict == PARSE_OK)
			return true;
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "format of %s refused: %s (the same text earlier)", name,
			    verdict_text(verdict));
		return false;
	}
	if (j->t->nr_killed >= HA_TEP_KILLED_MAX) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "format of %s refused: %u texts of this session already crashed"
			    " libtraceevent, no more are parsed", name, j->t->nr_killed);
		return false;
	}
	if (ha_sandbox_run(parse_in_child, (void *)j, &code, &e)) {
		verdict = code >= PARSE_OK && code < PARSE_KILLED ? (ParseVerdict)code :
			  PARSE_KILLED;
	} else if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_INVALID_DATA)) {
		verdict = PARSE_KILLED;
		j->t->nr_killed++;
	} else {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "format of %s not parsed: %s", name, e->message);
		return false;
	}
	G_LOCK(verdicts);
	if (g_hash_table_size(verdicts) < HA_TEP_VERDICTS_MAX)
		g_hash_table_insert(verdicts, g_steal_pointer(&key),
				    GUINT_TO_POINTER(verdict + 1u));
	G_UNLOCK(verdicts);
	if (verdict == PARSE_OK)
		return true;
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "format of %s refused: %s%s%s",
		    name, verdict_text(verdict), e ? " in the sandbox: " : "",
		    e ? e->message : "");
	return false;
}

static bool add_header_page(HaTep *t, const char *text, size_t len, GError **error)
{
	g_autofree char *copy = g_strndup(text, len);
	const char *commit = strstr(copy, "local_t commit;");

	if (t->have_header)
		return true;	/* the layout cannot change within a boot */
	for (size_t off = 0, n; off < len; off += n + 1) {
		const char *nl = memchr(text + off, '\n', len - off);

		n = nl ? (size_t)(nl - text - off) : len - off;
		if (!nl || !field_line_ok(text + off, n)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "header_page format refused: a field line is cut or malformed");
			return false;
		}
	}
	if (!strstr(copy, " timestamp;") || !commit || !strstr(copy, " data;")) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "header_page format refused: no timestamp, commit or data field");
		return false;
	}
	/* The commit field's size is the guest's long size (header_page format). */
	if (commit && strstr(commit, "size:4;") &&
	    strstr(commit, "size:4;") < strstr(commit, "\n"))
		t->long_size = 4;
	if (g_hash_table_contains(t->known, "header_page")) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "header_page format refused by libtraceevent before: not parsed again");
		return false;
	}
	{
		const ParseJob j = { .t = t, .event = "header_page", .text = copy,
				     .len = strlen(copy) };
		g_autoptr(GError) e = NULL;

		if (!sandbox_ok(&j, "header_page", &e)) {
			if (e->code != G_IO_ERROR_FAILED)
				ha_tep_add_refused(t, "header_page", len);
			g_propagate_error(error, g_steal_pointer(&e));
			return false;
		}
	}
	ha_tep_add_refused(t, "header_page", len);	/* until it is accepted */
	if (tep_parse_header_page(t->tep, copy, strlen(copy), t->long_size) != 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "header_page format refused by libtraceevent");
		return false;
	}
	tep_set_long_size(t->tep, t->long_size);
	t->kbuf = kbuffer_alloc(t->long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
				t->big_endian ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	if (!t->kbuf) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "kbuffer_alloc failed");
		return false;
	}
	t->have_header = true;
	g_hash_table_replace(t->known, g_strdup("header_page"), GINT_TO_POINTER(1));
	return true;
}

/* The event id of a whole format text ("ID: N" line), -1 when it has none. */
static long format_id(const char *text, size_t len)
{
	if (!text)
		return -1;
	for (const char *l = text, *end = text + len; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t n = (size_t)((nl ? nl : end) - l);

		if (n > 4 && n < 12 && memcmp(l, "ID: ", 4) == 0) {
			long id = 0;

			for (size_t i = 4; i < n; i++) {
				if (!g_ascii_isdigit(l[i]))
					return -1;
				id = id * 10 + (l[i] - '0');
			}
			return id <= 65535 ? id : -1;	/* common_type is a u16 */
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	return -1;
}

/* Remember which event id a refused text declared: its events print as such. */
static void note_refused_id(HaTep *t, const char *name, const char *text, size_t len)
{
	long id = format_id(text, len);

	if (id >= 0 && !g_hash_table_contains(t->refused_ids, GINT_TO_POINTER(id)) &&
	    g_hash_table_size(t->refused_ids) < HA_TEP_FORMATS_MAX)
		g_hash_table_insert(t->refused_ids, GINT_TO_POINTER(id), g_strescape(name, NULL));
}

/* @f as fill_event() reads it: an offset and a size tep_read_number() reads. */
static FieldAt field_at(const struct tep_format_field *f)
{
	if (!f || f->offset < 0 || (f->size != 1 && f->size != 2 && f->size != 4 &&
				    f->size != 8))
		return (FieldAt){ 0 };
	return (FieldAt){ .off = (uint32_t)f->offset, .size = (uint32_t)f->size };
}

bool ha_tep_add_format(HaTep *t, const char *name, const char *text, size_t len,
		       GError **error)
{
	const char *slash;
	g_autofree char *sys = NULL;
	g_autofree char *fixed = NULL;
	struct tep_event *ev = NULL;
	int nfields = 0;

	if (len > HA_TEP_TEXT_MAX) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
			    "format of %s: %zu bytes, above the limit of %u", name, len,
			    HA_TEP_TEXT_MAX);
		return false;
	}
	if (strcmp(name, "header_page") == 0)
		return add_header_page(t, text, len, error);
	if (strcmp(name, "header_event") == 0)
		return true;
	slash = strchr(name, '/');
	if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/')) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "format name '%s' is not SYSTEM/EVENT", name);
		return false;
	}
	sys = g_strndup(name, slash - name);
	if (g_hash_table_contains(t->known, name) ||
	    tep_find_event_by_name(t->tep, sys, slash + 1))
		return true;	/* already known: libtraceevent cannot replace it */
	if (t->nr_parsed >= HA_TEP_FORMATS_MAX || t->parsed_bytes + len > HA_TEP_BYTES_MAX) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE,
			    "format of %s (%zu bytes) over the budget: %u formats of %zu bytes"
			    " parsed, at most %u of %u bytes, each at most %u", name, len,
			    t->nr_parsed, t->parsed_bytes, HA_TEP_FORMATS_MAX, HA_TEP_BYTES_MAX,
			    HA_TEP_TEXT_MAX);
		return false;
	}
	{
		const char *why = NULL;

		if (!format_whole(text, len, slash + 1, &nfields, &why)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "format of %s refused: %s", name, why);
			return false;
		}
	}
	{
		unsigned int raw = 0;

		/* printfmt.h: the print fmt line as libtraceevent prints it right */
		fixed = ha_printfmt_fix(text, len, t->enum_fn, t->enum_user, &raw);
		t->raw_fields += raw;
	}
	{
		const ParseJob j = { .t = t, .sys = sys, .event = slash + 1, .text = fixed,
				     .len = strlen(fixed), .nfields = nfields };
		g_autoptr(GError) e = NULL;

		/* refused in the sandbox: the name is taken (never parsed again in
		 * this boot), its bytes charged, and libtraceevent here never saw it */
		if (!sandbox_ok(&j, name, &e)) {
			if (e->code != G_IO_ERROR_FAILED)
				ha_tep_add_refused_text(t, name, text, len);
			g_propagate_error(error, g_steal_pointer(&e));
			return false;
		}
	}
	/* The child survived this very call on a copy of this very state. From here on
	 * the name is taken and its bytes are charged, accepted or not. */
	ha_tep_add_refused(t, name, len);
	if (tep_parse_format(t->tep, &ev, fixed, strlen(fixed), sys) != TEP_ERRNO__SUCCESS ||
	    !ev) {
		note_refused_id(t, name, text, len);
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "format of %s refused by libtraceevent", name);
		return false;
	}
	if (ev->format.nr_common + ev->format.nr_fields != nfields ||
	    g_strcmp0(ev->name, slash + 1)) {
		note_refused_id(t, name, text, len);
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "format of %s parsed only in part by libtraceevent (%d of %d fields)",
			    name, ev->format.nr_common + ev->format.nr_fields, nfields);
		return false;
	}
	g_hash_table_replace(t->known, g_strdup(name), GINT_TO_POINTER(1));
	g_hash_table_replace(t->names, GINT_TO_POINTER(ev->id), g_strdup(name));
	if (strcmp(name, "ftrace/stack_id") == 0) {
		struct tep_format_field *f = tep_find_field(ev, "stack_id");

		if (!f || f->size != 4) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "ftrace/stack_id has no 4-byte field stack_id");
			return false;
		}
		t->ev_stack_id = ev;
		t->sid_at = field_at(f);
	} else if (strcmp(name, "ftrace/kernel_stack") == 0) {
		struct tep_format_field *fs = tep_find_field(ev, "size");
		struct tep_format_field *fc = tep_find_field(ev, "caller");

		if (!fs || !fc || fs->size != 4) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "ftrace/kernel_stack lacks size/caller fields");
			return false;
		}
		t->ev_kstack = ev;
		t->ksize_at = field_at(fs);
		t->kcaller_off = fc->offset < 0 ? UINT32_MAX : (uint32_t)fc->offset;
	}
	return true;
}

bool ha_tep_knows(const HaTep *t, const char *name)
{
	return g_hash_table_contains(t->known, name);
}

bool ha_tep_accepted(const HaTep *t, const char *name)
{
	if (strcmp(name, "header_page") == 0)
		return t->have_header;
	return g_hash_table_lookup(t->known, name) != NULL;
}

void ha_tep_add_refused(HaTep *t, const char *name, size_t len)
{
	if (!g_hash_table_contains(t->known, name))
		g_hash_table_insert(t->known, g_strdup(name), NULL);
	t->nr_parsed++;
	t->parsed_bytes += len;
}

void ha_tep_add_refused_text(HaTep *t, const char *name, const char *text, size_t len)
{
	ha_tep_add_refused(t, name, len);
	note_refused_id(t, name, text, len);
}

size_t ha_tep_parsed_bytes(const HaTep *t)
{
	return t->parsed_bytes;
}

long ha_tep_missed(const HaTep *t)
{
	return t->missed;
}

const char *ha_tep_event_name(HaTep *t, int type)
{
	return g_hash_table_lookup(t->names, GINT_TO_POINTER(type));
}

static uint32_t rd4(const HaTep *t, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return t->big_endian ? GUINT32_FROM_BE(v) : GUINT32_FROM_LE(v);
}

static void wr4(const HaTep *t, uint8_t *p, uint32_t v)
{
	v = t->big_endian ? GUINT32_TO_BE(v) : GUINT32_TO_LE(v);
	memcpy(p, &v, 4);
}

/* A data event at @off of the @hdr-byte header's page into t->evs. */
static void keep_event(HaTep *t, uint64_t ts, uint32_t off, uint32_t size)
{
	if (t->nr_evs == t->evs_cap) {
		t->evs_cap = MAX(64, t->evs_cap * 2);
		t->evs = g_renew(PageEv, t->evs, t->evs_cap);
	}
	t->evs[t->nr_evs++] = (PageEv){ ts, off, size };
}

/*
 * Check that kbuffer's walk of the @size committed bytes at @data stays in bounds and
 * moves forward. @data is the padded page copy: reads up to 8 bytes past the commit
 * stay inside it (PAGE_SLACK), and it may be rewritten (see the padding case). Keeps
 * each data event (t->evs: its time stamp, where its data lies from @data - @hdr, and
 * its size) as kbuffer's walk would give it: time extends and padding add their
 * delta and are skipped, a type_len 0 event's data follows its length word and is that
 * word - 4 rounded up to 4 bytes, others' is type_len * 4 bytes after the header.
 */
static bool layout_ok(HaTep *t, uint8_t *data, uint32_t hdr, uint32_t size, uint64_t ts,
		      GError **error)
{
	uint32_t off = 0;

	t->nr_evs = 0;
	while (off < size) {
		uint32_t w, type_len, delta, next;

		if (size - off < 4)
			goto bad;
		w = rd4(t, data + off);
		type_len = t->big_endian ? w >> 27 : w & 0x1f;
		delta = t->big_endian ? w & 0x7ffffffu : w >> 5;
		switch (type_len) {
		case KBUFFER_TYPE_PADDING: {
			/*
			 * A padding event that reaches past the commit ends the page. Its
			 * length word is then not a length: array[0] may lie past the commit
			 * (padded zeros), and 6.1's rb_event_set_padding() (time_delta 0,
			 * "the rest of the page") leaves a stale word there, anything up to
			 * 2^32 - 1. kbuffer adds it as an int and a value from 2^31 on can
			 * send its walk backwards forever, so in our copy (only) make it say
			 * "the rest of the page" for kbuffer too.
			 */
			uint32_t l = rd4(t, data + off + 4);

			ts += delta;
			if (l > size - off - 4) {
				wr4(t, data + off + 4, size - off - 4);
				l = size - off - 4;
			}
			next = off + 4 + l;
			break;
		}
		case KBUFFER_TYPE_TIME_EXTEND:
			if (size - off < 8)
				goto bad;
			ts += ((uint64_t)rd4(t, data + off + 4) << 27) + delta;
			next = off + 8;
			break;
		case KBUFFER_TYPE_TIME_STAMP: {
			/*
			 * 6.1 writes an 8-byte absolute time stamp, e.g. for the event after
			 * a discarded reservation (rb_try_to_discard() makes before_stamp
			 * differ, which forces one) -- the stackmap discards its stack_id
			 * slot whenever the map refuses an insert. libtraceevent 1.7's
			 * kbuffer skips 16 bytes for it and misreads the rest of the page.
			 * In our copy, turn it into the equivalent 8-byte TIME_EXTEND
			 * relative to the running time stamp, which every kbuffer reads.
			 */
			uint64_t abs, d;

			if (size - off < 8)
				goto bad;
			abs = ((uint64_t)rd4(t, data + off + 4) << 27) | delta;
			d = abs > ts ? abs - ts : 0;
			if (d >= (1ull << 59))
				d = 0;
			wr4(t, data + off, t->big_endian ?
			    (uint32_t)KBUFFER_TYPE_TIME_EXTEND << 27 | (uint32_t)(d & 0x7ffffffu) :
			    (uint32_t)(d & 0x7ffffffu) << 5 | KBUFFER_TYPE_TIME_EXTEND);
			wr4(t, data + off + 4, (uint32_t)(d >> 27));
			ts += d;
			next = off + 8;
			break;
		}
		case 0: {
			uint32_t l;

			ts += delta;
			if (size - off < 8)
				goto bad;
			l = rd4(t, data + off + 4);
			if (l < 4 || l > size)
				goto bad;
			next = off + 8 + ((l - 4 + 3) & ~3u);
			if (next > size)
				goto bad;
			keep_event(t, ts, hdr + off + 8, (l - 4 + 3) & ~3u);
			break;
		}
		default:
			ts += delta;
			next = off + 4 + type_len * 4;
			if (next > size)
				goto bad;
			keep_event(t, ts, hdr + off + 4, type_len * 4);
			break;
		}
		if (next <= off)
			goto bad;
		off = next;
	}
	return true;
bad:
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
		    "ring-buffer event at offset %u runs outside the %u committed bytes",
		    off, size);
	return false;
}

static bool load_page(HaTep *t, const uint8_t *data, size_t len, GError **error)
{
	uint64_t commit;
	uint32_t hdr = 8 + (uint32_t)t->long_size;
	uint32_t size;

	if (!t->have_header || !t->kbuf) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED,
			    "page before the header_page format");
		return false;
	}
	if (len < hdr || len > t->page_size) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "page of %zu bytes (page size %u)", len, t->page_size);
		return false;
	}
	if (t->long_size == 8) {
		memcpy(&commit, data + 8, 8);
		commit = t->big_endian ? GUINT64_FROM_BE(commit) : GUINT64_FROM_LE(commit);
	} else {
		commit = rd4(t, data + 8);
	}
	size = (uint32_t)commit & COMMIT_MASK;
	if (size > len - hdr) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "page commit %u above the %zu bytes received", size, len - hdr);
		return false;
	}
	/* Check the padded copy, the very bytes kbuffer will read: a header word may
	 * sit in the last bytes of the commit with its length word after them. */
	memcpy(t->page, data, len);
	if (t->page_used > len)
		memset(t->page + len, 0, t->page_used - len);
	t->page_used = len;
	{
		uint64_t ts;	/* the page header's time stamp is a u64 on every arch */

		memcpy(&ts, t->page, 8);
		ts = t->big_endian ? GUINT64_FROM_BE(ts) : GUINT64_FROM_LE(ts);
		return layout_ok(t, t->page + hdr, hdr, size, ts, error);
	}
}

/* The number of @at's bytes in @d, an event of @size bytes; false when it has none. */
static inline bool read_at(const HaTep *t, FieldAt at, const uint8_t *d, uint32_t size,
			   uint64_t *v)
{
	if (!at.size || at.off > size || at.size > size - at.off)
		return false;
	d += at.off;
	switch (at.size) {
	case 1:
		*v = d[0];
		break;
	case 2: {
		uint16_t x;

		memcpy(&x, d, 2);
		*v = t->big_endian ? GUINT16_FROM_BE(x) : GUINT16_FROM_LE(x);
		break;
	}
	case 4:
		*v = rd4(t, d);
		break;
	default: {
		uint64_t x;

		memcpy(&x, d, 8);
		*v = t->big_endian ? GUINT64_FROM_BE(x) : GUINT64_FROM_LE(x);
		break;
	}
	}
	return true;
}

/*
 * The common fields' places, as libtraceevent's tep_data_type() and friends find them:
 * in the first event of the handle (the lowest id), looked up once, when the first
 * event is read. A field that is missing (or not 1, 2, 4 or 8 bytes) reads as -1, as
 * there.
 */
static void find_common(HaTep *t)
{
	struct tep_event *first;

	if (t->have_common || tep_get_events_count(t->tep) <= 0)
		return;
	first = tep_get_event(t->tep, 0);
	for (int i = 0; i < COMMON_NR; i++)
		t->common[i] = field_at(first ? tep_find_common_field(first, common_names[i]) :
					NULL);
	t->have_common = true;
}

static int64_t read_common(const HaTep *t, int which, const uint8_t *d, uint32_t size)
{
	uint64_t v;

	return read_at(t, t->common[which], d, size, &v) ? (int64_t)v : -1;
}

/*
 * One event: its common fields and, for the two stack events, the stack. The walk
 * costs no libtraceevent lookup per event: the kind comes from comparing the type with
 * the two stack events' ids, each field from its offset and size found once.
 */
static void fill_event(HaTep *t, HaEvent *ev, void *d, uint32_t size)
{
	int type;

	ev->kind = HA_EV_OTHER;
	ev->type = -1;
	ev->data = d;
	ev->size = size;
	ev->nr_ips = 0;
	ev->ips = NULL;
	if (size < 8)
		return;
	find_common(t);
	type = (int)read_common(t, COMMON_TYPE, d, size);
	ev->type = type;
	ev->pid = (int)read_common(t, COMMON_PID, d, size);
	ev->flags = (uint8_t)read_common(t, COMMON_FLAGS, d, size);
	ev->preempt = (uint8_t)read_common(t, COMMON_PREEMPT, d, size);
	if (t->ev_stack_id && type == t->ev_stack_id->id) {
		uint64_t v;

		if (read_at(t, t->sid_at, d, size, &v)) {
			ev->kind = HA_EV_STACK_ID;
			ev->stack_id = (uint32_t)v;
		}
	} else if (t->ev_kstack && type == t->ev_kstack->id) {
		uint64_t n;
		uint32_t off = t->kcaller_off, ls = (uint32_t)t->long_size;
		const uint8_t *p;

		if (!read_at(t, t->ksize_at, d, size, &n) || off > size)
			return;
		n = MIN(n, (size - off) / ls);
		n = MIN(n, HA_KSTACK_MAX);
		p = (const uint8_t *)d + off;
		if (ls == 8 && !t->big_endian == (G_BYTE_ORDER == G_LITTLE_ENDIAN)) {
			memcpy(t->ips, p, (size_t)n * 8);
		} else {
			for (uint32_t i = 0; i < n; i++) {
				uint64_t v = 0;

				read_at(t, (FieldAt){ .off = i * ls, .size = ls }, p,
					(uint32_t)n * ls, &v);
				t->ips[i] = v;
			}
		}
		ev->kind = HA_EV_KSTACK;
		ev->nr_ips = (uint32_t)n;
		ev->ips = t->ips;
	}
}

/* The page checked (load_page()) and its header read by kbuffer: the lost events. */
static bool load_subbuffer(HaTep *t, const uint8_t *data, size_t len, GError **error)
{
	if (!load_page(t, data, len, error))
		return false;
	if (kbuffer_load_subbuffer(t->kbuf, t->page) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "kbuffer refused page");
		return false;
	}
	t->missed = kbuffer_missed_events(t->kbuf);
	return true;
}

long ha_tep_walk_page(HaTep *t, const uint8_t *data, size_t len, HaEventFn fn,
		      void *user, GError **error)
{
	if (!load_subbuffer(t, data, len, error))
		return -1;
	for (uint32_t i = 0; i < t->nr_evs; i++) {
		HaEvent ev = { .ts = t->evs[i].ts };

		fill_event(t, &ev, t->page + t->evs[i].off, t->evs[i].size);
		if (fn)
			fn(&ev, user);
	}
	return t->nr_evs;
}

long ha_tep_walk_page_kbuffer(HaTep *t, const uint8_t *data, size_t len, HaEventFn fn,
			      void *user, GError **error)
{
	unsigned long long ts = 0;
	long n = 0;
	void *d;

	if (!load_subbuffer(t, data, len, error))
		return -1;
	for (d = kbuffer_read_event(t->kbuf, &ts); d; d = kbuffer_next_event(t->kbuf, &ts)) {
		HaEvent ev = { .ts = ts };
		int sz = kbuffer_event_size(t->kbuf);

		if (sz < 0)
			break;
		fill_event(t, &ev, d, (uint32_t)sz);
		if (fn)
			fn(&ev, user);
		n++;
	}
	return n;
}

/* tep_print_event() trusts field offsets and __data_loc words: check them first. */
static bool fields_fit(HaTep *t, struct tep_event *te, const HaEvent *ev)
{
	for (struct tep_format_field *f = te->format.fields; f; f = f->next) {
		if (f->offset < 0 || f->size < 0 ||
		    (uint64_t)f->offset + (uint64_t)f->size > ev->size)
			return false;
		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			uint32_t loc;

			if (f->size != 4)
				return false;
			loc = (uint32_t)tep_read_number(t->tep,
					(const uint8_t *)ev->data + f->offset, 4);
			if ((uint64_t)(loc & 0xffff) + (loc >> 16) > ev->size)
				return false;
		}
	}
	return true;
}

char *ha_tep_format_event(HaTep *t, const HaEvent *ev)
{
	struct tep_record rec = { .data = (void *)ev->data, .size = (int)ev->size,
				  .ts = ev->ts };
	struct tep_event *te = ev->type >= 0 ? tep_find_event(t->tep, ev->type) : NULL;
	const char *refused;
	struct trace_seq s;
	char *out;

	if (!te && ev->type >= 0 &&
	    (refused = g_hash_table_lookup(t->refused_ids, GINT_TO_POINTER(ev->type))))
		return g_strdup_printf("%s: <event type %d of a format the host refused:"
				       " fields not decoded>", refused, ev->type);
	if (!te)
		return g_strdup_printf("<unknown event type %d>", ev->type);
	if (!fields_fit(t, te, ev))
		return g_strdup_printf("%s/%s: <fields outside the %u-byte record>",
				       te->system, te->name, ev->size);
	trace_seq_init(&s);
	trace_seq_printf(&s, "%s/%s: ", te->system, te->name);
	printing = t;
	tep_print_event(t->tep, &s, &rec, "%s", TEP_PRINT_INFO);
	printing = NULL;
	trace_seq_terminate(&s);
	out = g_strdup(s.buffer);
	trace_seq_destroy(&s);
	return out;
}

void ha_tep_set_enum_resolver(HaTep *t, HaEnumFn fn, void *user)
{
	t->enum_fn = fn;
	t->enum_user = user;
}

void ha_tep_set_symbolizer(HaTep *t, HaSymbolizeFn fn, void *user)
{
	t->sym_fn = fn;
	t->sym_user = user;
}

unsigned int ha_tep_raw_fields(const HaTep *t)
{
	return t->raw_fields;
}

void ha_tep_add_symbol(HaTep *t, uint64_t addr, const char *name, const char *module)
{
	tep_register_function(t->tep, (char *)name, addr, (char *)module);
}
