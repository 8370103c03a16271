// SPDX-License-Identifier: MIT
/* printfmt.c - print fmt rewriting for libtraceevent (see printfmt.h). */
#include "printfmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool is_id0(char c)
{
	return g_ascii_isalpha(c) || c == '_';
}

static bool is_id(char c)
{
	return g_ascii_isalnum(c) || c == '_';
}

/* The index after the string or character literal that starts at s[i]. */
static size_t skip_literal(const char *s, size_t n, size_t i)
{
	char q = s[i++];

	while (i < n && s[i] != q) {
		if (s[i] == '\\' && i + 1 < n)
			i++;
		i++;
	}
	return i < n ? i + 1 : n;
}

/* The index of the ')' that closes the '(' at s[i], or n. */
static size_t match_paren(const char *s, size_t n, size_t i)
{
	int depth = 0;

	while (i < n) {
		if (s[i] == '"' || s[i] == '\'') {
			i = skip_literal(s, n, i);
			continue;
		}
		if (s[i] == '(')
			depth++;
		else if (s[i] == ')' && --depth == 0)
			return i;
		i++;
	}
	return n;
}

/* The index of the first ',' at depth 0 from s[i], or n. */
static size_t top_comma(const char *s, size_t n, size_t i)
{
	int depth = 0;

	while (i < n) {
		char c = s[i];

		if (c == '"' || c == '\'') {
			i = skip_literal(s, n, i);
			continue;
		}
		if (c == '(' || c == '{' || c == '[')
			depth++;
		else if (c == ')' || c == '}' || c == ']')
			depth--;
		else if (c == ',' && depth == 0)
			return i;
		i++;
	}
	return n;
}

/* ---- constant expressions --------------------------------------------------------- */

typedef struct {
	const char *p;
	const char *end;
	bool neg;		/* a unary minus was applied */
} Cexp;

static void c_ws(Cexp *e)
{
	while (e->p < e->end && g_ascii_isspace(*e->p))
		e->p++;
}

static bool c_num(Cexp *e, uint64_t *v)
{
	char buf[32];
	size_t k = 0;
	char *end;

	c_ws(e);
	if (e->p >= e->end || !g_ascii_isdigit(*e->p))
		return false;
	while (e->p < e->end && g_ascii_isalnum(*e->p)) {
		if (k == sizeof(buf) - 1)
			return false;
		buf[k++] = *e->p++;
	}
	while (k && strchr("uUlL", buf[k - 1]))
		k--;
	buf[k] = '\0';
	*v = g_ascii_strtoull(buf, &end, 0);
	return k && *end == '\0';
}

static bool c_unary(Cexp *e, uint64_t *v, int depth)
{
	char op;

	c_ws(e);
	if (depth > 32 || e->p >= e->end)
		return false;
	op = *e->p;
	if (op != '-' && op != '~' && op != '!' && op != '+')
		return c_num(e, v);
	e->p++;
	if (!c_unary(e, v, depth + 1))
		return false;
	if (op == '-') {
		*v = -*v;
		e->neg = true;
	} else if (op == '~') {
		*v = ~*v;
	} else if (op == '!') {
		*v = !*v;
	}
	return true;
}

/* C precedence of the binary operator at e->p (its length in *len): -1 at the end,
 * -2 for anything that is not one of * / % + - << >> & ^ |. */
static int c_prec(Cexp *e, int *len)
{
	char c, d;

	c_ws(e);
	if (e->p >= e->end)
		return -1;
	c = e->p[0];
	d = e->p + 1 < e->end ? e->p[1] : '\0';
	*len = 1;
	switch (c) {
	case '*': case '/': case '%':
		return 10;
	case '+': case '-':
		return 9;
	case '<': case '>':
		*len = 2;
		return d == c ? 8 : -2;
	case '&':
		return d == '&' ? -2 : 5;
	case '^':
		return 4;
	case '|':
		return d == '|' ? -2 : 3;
	default:
		return -2;
	}
}

static bool c_binary(Cexp *e, uint64_t *v, int min, int depth)
{
	if (depth > 32 || !c_unary(e, v, depth))
		return false;
	for (;;) {
		const char *at = e->p;
		int len = 0, p = c_prec(e, &len);
		char op;
		uint64_t r;

		if (p == -1)
			return true;
		if (p == -2)
			return false;
		if (p < min) {
			e->p = at;
			return true;
		}
		op = *e->p;
		e->p += len;
		if (!c_binary(e, &r, p + 1, depth + 1))
			return false;
		switch (op) {
		case '*': *v *= r; break;
		case '/': if (!r) return false; *v /= r; break;
		case '%': if (!r) return false; *v %= r; break;
		case '+': *v += r; break;
		case '-': *v -= r; break;
		case '<': if (r > 63) return false; *v <<= r; break;
		case '>': if (r > 63) return false; *v >>= r; break;
		case '&': *v &= r; break;
		case '^': *v ^= r; break;
		case '|': *v |= r; break;
		}
	}
}

/* @s[0..n) as a constant expression of integer literals, or false. */
static bool c_eval(const char *s, size_t n, uint64_t *v)
{
	Cexp e = { .p = s, .end = s + n };

	if (!c_binary(&e, v, 0, 0))
		return false;
	c_ws(&e);
	return e.p == e.end && !e.neg && *v < (UINT64_C(1) << 63);
}

static const char *const type_words[] = {
	"unsigned", "signed", "long", "int", "short", "char", "bool", "_Bool",
	"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
	"__u8", "__u16", "__u32", "__u64", "__s8", "__s16", "__s32", "__s64", NULL,
};

static bool is_type_word(const char *w, size_t n)
{
	for (unsigned int i = 0; type_words[i]; i++)
		if (strlen(type_words[i]) == n && !strncmp(type_words[i], w, n))
			return true;
	return n > 2 && w[n - 2] == '_' && w[n - 1] == 't';	/* gfp_t, size_t ... */
}

/* Is @s[0..n) an integer type name ("unsigned long", " gfp_t")? */
static bool is_int_type(const char *s, size_t n)
{
	size_t i = 0, words = 0;

	while (i < n) {
		size_t st;

		if (g_ascii_isspace(s[i])) {
			i++;
			continue;
		}
		if (!is_id0(s[i]))
			return false;
		st = i;
		while (i < n && is_id(s[i]))
			i++;
		if (!is_type_word(s + st, i - st))
			return false;
		words++;
	}
	return words > 0;
}

/* Fold the innermost constant groups and casts of constants, once over @a. */
static bool fold_once(GString *a)
{
	bool changed = false;

	for (size_t i = 0; i < a->len; i++) {
		char c = a->str[i];
		size_t j, k;
		uint64_t v;

		if (c == '"' || c == '\'') {
			i = skip_literal(a->str, a->len, i) - 1;
			continue;
		}
		if (c != '(')
			continue;
		for (j = i + 1; j < a->len && !strchr("()\"'", a->str[j]); j++)
			;
		if (j >= a->len || a->str[j] != ')')
			continue;
		for (k = i; k > 0 && g_ascii_isspace(a->str[k - 1]); k--)
			;
		if (k > 0 && is_id(a->str[k - 1]))
			continue;	/* a call's arguments */
		if (is_int_type(a->str + i + 1, j - i - 1)) {
			size_t m = j + 1;

			while (m < a->len && g_ascii_isspace(a->str[m]))
				m++;
			if (m < a->len && g_ascii_isdigit(a->str[m])) {
				g_string_erase(a, (gssize)i, (gssize)(m - i));
				changed = true;
			}
			continue;
		}
		if (c_eval(a->str + i + 1, j - i - 1, &v)) {
			char num[24];

			g_snprintf(num, sizeof(num), "0x%" PRIx64, v);
			g_string_erase(a, (gssize)i, (gssize)(j + 1 - i));
			g_string_insert(a, (gssize)i, num);
			changed = true;
		}
	}
	return changed;
}

/* ---- names ------------------------------------------------------------------------ */

static const char *const not_names[] = {
	"REC", "enum", "struct", "union", "sizeof", "const", "volatile", "void",
	"true", "false", "NULL", NULL,
};

/* Is the identifier at a[st..en) a name to resolve (not a field, call, keyword,
 * type or part of a cast)? */
static bool is_name(const GString *a, size_t st, size_t en)
{
	const char *s = a->str;
	size_t i, j;

	for (unsigned int k = 0; not_names[k]; k++)
		if (strlen(not_names[k]) == en - st && !strncmp(not_names[k], s + st, en - st))
			return false;
	if (is_type_word(s + st, en - st))
		return false;
	if ((st >= 2 && s[st - 2] == '-' && s[st - 1] == '>') || (st && s[st - 1] == '.'))
		return false;
	for (j = en; j < a->len && g_ascii_isspace(s[j]); j++)
		;
	if (j < a->len && s[j] == '(')
		return false;
	/* the field name argument of __get_str(), __get_dynamic_array() ... */
	{
		int depth = 0;

		for (i = st; i > 0; i--) {
			char c = s[i - 1];

			if (c == ')' || c == '}')
				depth++;
			else if ((c == '(' || c == '{') && depth-- == 0)
				break;
		}
		if (i > 0 && s[i - 1] == '(') {
			size_t e = i - 1, b;

			while (e > 0 && g_ascii_isspace(s[e - 1]))
				e--;
			for (b = e; b > 0 && is_id(s[b - 1]); b--)
				;
			if (e - b >= 5 && !strncmp(s + b, "__get", 5))
				return false;
		}
	}
	/* after enum/struct/union */
	for (i = st; i > 0 && g_ascii_isspace(s[i - 1]); i--)
		;
	if (i >= 4 && !strncmp(s + i - 4, "enum", 4))
		return false;
	if (i >= 6 && (!strncmp(s + i - 6, "struct", 6) || !strncmp(s + i - 5, "union", 5)))
		return false;
	/* a cast: ( words and '*' ) followed by an operand */
	for (i = st; i > 0 && (is_id(s[i - 1]) || s[i - 1] == ' ' || s[i - 1] == '*'); i--)
		;
	for (j = en; j < a->len && (is_id(s[j]) || s[j] == ' ' || s[j] == '*'); j++)
		;
	if (i > 0 && s[i - 1] == '(' && j < a->len && s[j] == ')') {
		for (j++; j < a->len && g_ascii_isspace(s[j]); j++)
			;
		if (j < a->len && (is_id(s[j]) || s[j] == '('))
			return false;
	}
	return true;
}

/* Replace the names @fn knows by their values. */
static void subst_names(GString *a, HaEnumFn fn, void *user)
{
	for (size_t i = 0; fn && i < a->len; i++) {
		size_t st = i;
		int64_t v;
		char num[24];
		g_autofree char *name = NULL;

		if (a->str[i] == '"' || a->str[i] == '\'') {
			i = skip_literal(a->str, a->len, i) - 1;
			continue;
		}
		if (!is_id0(a->str[i]) || (i && is_id(a->str[i - 1])))
			continue;
		while (i < a->len && is_id(a->str[i]))
			i++;
		if (!is_name(a, st, i) || g_ascii_isdigit(a->str[st])) {
			i--;
			continue;
		}
		name = g_strndup(a->str + st, i - st);
		if (!fn(name, &v, user)) {
			i--;
			continue;
		}
		if (v < 0)
			g_snprintf(num, sizeof(num), "(%" PRId64 ")", v);
		else
			g_snprintf(num, sizeof(num), "0x%" PRIx64, (uint64_t)v);
		g_string_erase(a, (gssize)st, (gssize)(i - st));
		g_string_insert(a, (gssize)st, num);
		i = st + strlen(num) - 1;
	}
}

/* Does a[st..en) hold a name (is_name()) outside string literals? */
static bool has_name(const GString *a, size_t st, size_t en)
{
	for (size_t i = st; i < en; i++) {
		size_t b = i;

		if (a->str[i] == '"' || a->str[i] == '\'') {
			i = skip_literal(a->str, en, i) - 1;
			continue;
		}
		if (!is_id0(a->str[i]) || (i && is_id(a->str[i - 1])))
			continue;
		while (i < en && is_id(a->str[i]))
			i++;
		if (is_name(a, b, i))
			return true;
		i--;
	}
	return false;
}

/* A __print_symbolic() or __print_flags() that still names an unknown constant
 * becomes __ha_raw(its value). Returns how many. */
static unsigned int mark_raw(GString *a)
{
	static const char *const calls[] = { "__print_symbolic_u64", "__print_flags_u64",
					     "__print_symbolic", "__print_flags", NULL };
	unsigned int n = 0;

	for (size_t i = 0; i < a->len; i++) {
		size_t open, close, comma;

		if (a->str[i] == '"' || a->str[i] == '\'') {
			i = skip_literal(a->str, a->len, i) - 1;
			continue;
		}
		for (unsigned int k = 0; calls[k]; k++) {
			size_t l = strlen(calls[k]);
			g_autofree char *value = NULL;

			if (strncmp(a->str + i, calls[k], l) || (i && is_id(a->str[i - 1])))
				continue;
			for (open = i + l; open < a->len && g_ascii_isspace(a->str[open]); open++)
				;
			if (open >= a->len || a->str[open] != '(')
				break;
			close = match_paren(a->str, a->len, open);
			if (close >= a->len)
				break;
			comma = top_comma(a->str, close, open + 1);
			if (comma >= close || !has_name(a, comma, close))
				break;
			value = g_strndup(a->str + open + 1, comma - open - 1);
			g_string_erase(a, (gssize)i, (gssize)(close + 1 - i));
			g_string_insert(a, (gssize)i, "__ha_raw()");
			g_string_insert(a, (gssize)(i + strlen("__ha_raw(")), value);
			n++;
			break;
		}
	}
	return n;
}

/* ---- the format string ------------------------------------------------------------ */

/*
 * Rewrite the conversions of the format string @f (the text between the quotes) into
 * @out; @wrap[i] gets the print function's letter for argument i ('\0': unchanged).
 * An argument flagged in @unknown (the host cannot evaluate it) is printed with %s.
 * Returns the number of arguments the conversions take, or -1.
 */
static int rewrite_fmt(const char *f, size_t n, const GByteArray *unknown, GString *out,
		       GByteArray *wrap)
{
	int arg = 0;

	for (size_t i = 0; i < n; i++) {
		size_t st = i;
		char conv;

		g_string_append_c(out, f[i]);
		if (f[i] == '\\' && i + 1 < n) {
			g_string_append_c(out, f[++i]);
			continue;
		}
		if (f[i] != '%')
			continue;
		if (i + 1 < n && f[i + 1] == '%') {
			g_string_append_c(out, f[++i]);
			continue;
		}
		for (i++; i < n && strchr("-+ #0", f[i]); i++)
			;
		for (; i < n && (g_ascii_isdigit(f[i]) || f[i] == '*' || f[i] == '.'); i++)
			if (f[i] == '*') {
				g_byte_array_append(wrap, (const guint8 *)"", 1);
				arg++;
			}
		for (; i < n && strchr("hlLqjzt", f[i]); i++)
			;
		if (i >= n)
			return -1;
		conv = f[i];
		if (conv == 'p' && i + 1 < n && strchr("SsBFf", f[i + 1])) {
			char letter = f[i + 1];

			i++;
			if (i + 1 < n && f[i + 1] == 'R')
				i++;	/* %pSR: same output */
			g_string_truncate(out, out->len - 1);
			g_string_append(out, "%s");
			g_byte_array_append(wrap, (const guint8 *)&letter, 1);
		} else if (conv == 'p' && !(i + 1 < n && g_ascii_isalnum(f[i + 1]))) {
			g_string_truncate(out, out->len - 1);
			g_string_append(out, "%016lx");
			g_byte_array_append(wrap, (const guint8 *)"", 1);
		} else {
			g_string_append_len(out, f + st + 1, (gssize)(i - st));
			g_byte_array_append(wrap, (const guint8 *)"", 1);
		}
		if ((guint)arg < unknown->len && unknown->data[arg]) {
			/* replace this conversion (and any %p extension letters) by %s */
			while (out->len && out->str[out->len - 1] != '%')
				g_string_truncate(out, out->len - 1);
			g_string_append_c(out, 's');
			while (i + 1 < n && conv == 'p' && g_ascii_isalnum(f[i + 1]))
				i++;
		}
		arg++;
	}
	return arg;
}

/*
 * The print fmt line of @text rewritten: each argument's names through @fn, then, for
 * the host's printer (@host), raw and unknown markers and the %p conversions
 * (printfmt.h); constants folded either way.
 */
static char *fix(const char *text, size_t len, HaEnumFn fn, void *user, bool host,
		 unsigned int *ret_raw)
{
	static const char key[] = "print fmt: \"";
	g_autoptr(GString) out = g_string_new_len(text, (gssize)len);
	g_autoptr(GString) fmt = g_string_new(NULL);
	g_autoptr(GString) args = g_string_new(NULL);
	g_autoptr(GByteArray) wrap = g_byte_array_new();
	g_autoptr(GByteArray) unknown = g_byte_array_new();
	g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(g_free);
	const char *s = out->str;
	const char *at = g_strstr_len(s, (gssize)len, key);
	size_t fst, fen, eol, i;
	unsigned int raw = 0;
	int nargs;

	if (ret_raw)
		*ret_raw = 0;
	if (!at || (at != s && at[-1] != '\n'))
		return g_string_free(g_steal_pointer(&out), FALSE);
	fst = (size_t)(at - s) + strlen(key) - 1;	/* the opening quote */
	fen = skip_literal(s, len, fst);		/* after the closing quote */
	for (eol = fen; eol < len && s[eol] != '\n'; eol++)
		;
	if (fen > eol || fen < fst + 2 || s[fen - 1] != '"')
		return g_string_free(g_steal_pointer(&out), FALSE);
	/* the arguments, each after its comma */
	i = top_comma(s, eol, fen);
	if (i < eol && i > fen)
		return g_string_free(g_steal_pointer(&out), FALSE);	/* junk */
	while (i < eol) {
		size_t c = top_comma(s, eol, i + 1);
		g_autoptr(GString) a = g_string_new_len(s + i + 1, (gssize)(c - i - 1));
		guint8 u;

		subst_names(a, fn, user);
		if (host)
			raw += mark_raw(a);
		u = host && has_name(a, 0, a->len);	/* a name the host cannot evaluate */
		g_byte_array_append(unknown, &u, 1);
		g_ptr_array_add(list, g_string_free(g_steal_pointer(&a), FALSE));
		i = c;
	}
	if (host) {
		nargs = rewrite_fmt(s + fst + 1, fen - fst - 2, unknown, fmt, wrap);
	} else {
		g_autoptr(GString) dummy = g_string_new(NULL);

		/* the format string as it was: only its argument count */
		nargs = rewrite_fmt(s + fst + 1, fen - fst - 2, unknown, dummy, wrap);
		g_string_append_len(fmt, s + fst + 1, (gssize)(fen - fst - 2));
		memset(wrap->data, 0, wrap->len);
	}
	if (nargs < 0 || (guint)nargs != list->len)
		return g_string_free(g_steal_pointer(&out), FALSE);
	for (guint k = 0; k < list->len; k++) {
		const char *a = list->pdata[k];

		if (unknown->data[k])
			g_string_append(args, ", __ha_unknown(0)");
		else if (wrap->data[k])
			g_string_append_printf(args, ", __ha_sym_%c(%s)", wrap->data[k], a);
		else
			g_string_append_printf(args, ",%s", a);
	}
	while (fold_once(args))
		;
	if (ret_raw)
		*ret_raw = raw;
	g_string_erase(out, (gssize)fst, (gssize)(eol - fst));
	g_string_insert_c(fmt, 0, '"');
	g_string_append_c(fmt, '"');
	g_string_append(fmt, args->str);
	g_string_insert(out, (gssize)fst, fmt->str);
	return g_string_free(g_steal_pointer(&out), FALSE);
}

char *ha_printfmt_fix(const char *text, size_t len, HaEnumFn fn, void *user,
		      unsigned int *ret_raw)
{
	return fix(text, len, fn, user, true, ret_raw);
}

char *ha_printfmt_portable(const char *text, size_t len, HaEnumFn fn, void *user)
{
	return fix(text, len, fn, user, false, NULL);
}
