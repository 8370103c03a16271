// SPDX-License-Identifier: MIT
/* flamegraph.c - folded stacks to an interactive SVG (see flamegraph.h). */
#include "flamegraph.h"

#include <gio/gio.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#define FG_WIDTH	1200
#define FG_PAD		10
#define FG_FRAME	16
#define FG_TOP		64
#define FG_BOTTOM	28
#define FG_MIN_PX	0.1	/* narrower frames are not drawn (their parent counts them) */
#define FG_MAX_FRAMES	8000	/* and at most this many: a browser shows it in seconds */

typedef struct _Node Node;
struct _Node {
	char *name;
	uint64_t count;
	GHashTable *kids;	/* name -> Node */
};

static Node *node_new(const char *name)
{
	Node *n = g_new0(Node, 1);

	n->name = g_strdup(name);
	return n;
}

static void node_free(gpointer p)
{
	Node *n = p;

	if (n->kids)
		g_hash_table_destroy(n->kids);
	g_free(n->name);
	g_free(n);
}

static Node *node_kid(Node *n, const char *name)
{
	Node *k;

	if (!n->kids)
		n->kids = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, node_free);
	k = g_hash_table_lookup(n->kids, name);
	if (!k) {
		k = node_new(name);
		g_hash_table_insert(n->kids, k->name, k);
	}
	return k;
}

static int kid_cmp(gconstpointer a, gconstpointer b)
{
	return strcmp((*(Node *const *)a)->name, (*(Node *const *)b)->name);
}

static void xml_text(GString *o, const char *s)
{
	g_autofree char *e = g_markup_escape_text(s, -1);

	g_string_append(o, e);
}

/* A warm colour from the name, the same for the same function everywhere. */
static void colour(const char *name, int *r, int *g, int *b)
{
	guint h = g_str_hash(name);

	*r = 205 + (int)(h % 50);
	*g = 60 + (int)((h >> 8) % 130);
	*b = 40 + (int)((h >> 16) % 40);
}

typedef struct {
	GString *o;
	uint64_t total;
	uint64_t min_count;	/* events of the narrowest frame drawn */
	int height;
	guint frames;
} Layout;

static void collect_counts(const Node *n, GArray *counts)
{
	GHashTableIter it;
	gpointer k, v;

	g_array_append_val(counts, n->count);
	if (!n->kids)
		return;
	g_hash_table_iter_init(&it, n->kids);
	while (g_hash_table_iter_next(&it, &k, &v))
		collect_counts(v, counts);
}

static int count_desc(gconstpointer a, gconstpointer b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * The fewest events a drawn frame has: FG_MIN_PX wide, and more when that would draw
 * over FG_MAX_FRAMES frames (then the narrowest go, as a wider --minwidth would).
 * A frame is never wider than its parent, so a count threshold keeps whole paths.
 */
static uint64_t min_count(const Node *root, uint64_t total)
{
	g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(uint64_t));
	double px = FG_MIN_PX * (double)total / (FG_WIDTH - 2 * FG_PAD);
	uint64_t min = (uint64_t)px;

	min += (double)min < px;	/* rounded up */
	min = MAX(min, 1);
	collect_counts(root, counts);
	if (counts->len <= FG_MAX_FRAMES)
		return min;
	g_array_sort(counts, count_desc);
	/* the root and the FG_MAX_FRAMES - 1 widest frames at most: ties go together */
	return MAX(min, g_array_index(counts, uint64_t, FG_MAX_FRAMES - 1) + 1);
}

static void emit(Layout *l, const Node *n, uint64_t start, int depth)
{
	double sc = (double)(FG_WIDTH - 2 * FG_PAD) / (double)l->total;
	double x = FG_PAD + (double)start * sc, w = (double)n->count * sc;
	int y = l->height - FG_BOTTOM - (depth + 1) * FG_FRAME;
	int r, g, b;
	int fit = (int)((w - 6) / 7.2);
	g_autoptr(GPtrArray) kids = g_ptr_array_new();
	uint64_t at = start;

	colour(n->name, &r, &g, &b);
	g_string_append_printf(l->o, "<g class=\"f\" data-s=\"%" PRIu64 "\" data-n=\"%" PRIu64
			       "\" data-d=\"%d\" data-name=\"", start, n->count, depth);
	xml_text(l->o, n->name);
	g_string_append(l->o, "\"><title>");
	xml_text(l->o, n->name);
	g_string_append_printf(l->o, " (%" PRIu64 " events, %.2f%%)</title>", n->count,
			       100.0 * (double)n->count / (double)l->total);
	g_string_append_printf(l->o, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\""
			       " fill=\"rgb(%d,%d,%d)\"/><text x=\"%.2f\" y=\"%d\">", x, y, w,
			       FG_FRAME - 1, r, g, b, x + 3, y + FG_FRAME - 4);
	if (fit >= 3) {
		size_t len = strlen(n->name);

		if (len <= (size_t)fit) {
			xml_text(l->o, n->name);
		} else {
			g_autofree char *cut = g_strndup(n->name, (gsize)fit - 2);

			xml_text(l->o, cut);
			g_string_append(l->o, "..");
		}
	}
	g_string_append(l->o, "</text></g>\n");
	l->frames++;
	if (!n->kids)
		return;
	{
		GHashTableIter it;
		gpointer k, v;

		g_hash_table_iter_init(&it, n->kids);
		while (g_hash_table_iter_next(&it, &k, &v))
			g_ptr_array_add(kids, v);
	}
	g_ptr_array_sort(kids, kid_cmp);
	for (guint i = 0; i < kids->len; i++) {
		const Node *k = kids->pdata[i];

		if (k->count >= l->min_count)
			emit(l, k, at, depth + 1);
		at += k->count;
	}
}

/* The interactive part: zoom, reset, search, details on hover. */
static const char script[] =
"var svg = document.documentElement, fr = [], tot = 0, W = 0, PAD = 10, details;\n"
"function num(g, k) { return +g.getAttribute('data-' + k); }\n"
"function fit(t, name, w) {\n"
"  var c = Math.floor((w - 6) / 7.2);\n"
"  t.textContent = c < 3 ? '' : name.length <= c ? name : name.slice(0, c - 2) + '..';\n"
"}\n"
"function place(g, s, n, s0, n0) {\n"
"  var sc = (W - 2 * PAD) / n0, x = PAD + (s - s0) * sc, w = n * sc;\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', Math.max(w, 0).toFixed(2));\n"
"  t.setAttribute('x', (x + 3).toFixed(2)); fit(t, g.getAttribute('data-name'), w);\n"
"}\n"
"function zoom(z) {\n"
"  var zs = num(z, 's'), zn = num(z, 'n'), zd = num(z, 'd');\n"
"  fr.forEach(function (g) {\n"
"    var s = num(g, 's'), n = num(g, 'n'), d = num(g, 'd');\n"
"    if (d >= zd && s >= zs && s + n <= zs + zn) {\n"
"      g.style.display = ''; g.classList.remove('parent'); place(g, s, n, zs, zn);\n"
"    } else if (d < zd && s <= zs && s + n >= zs + zn) {\n"
"      g.style.display = ''; g.classList.add('parent'); place(g, zs, zn, zs, zn);\n"
"    } else g.style.display = 'none';\n"
"  });\n"
"  document.getElementById('reset').style.opacity = 1;\n"
"}\n"
"function reset() {\n"
"  fr.forEach(function (g) {\n"
"    g.style.display = ''; g.classList.remove('parent');\n"
"    place(g, num(g, 's'), num(g, 'n'), 0, tot);\n"
"  });\n"
"  document.getElementById('reset').style.opacity = 0.3;\n"
"}\n"
"function search(re) {\n"
"  if (re === undefined) re = prompt('Search (regular expression)', '');\n"
"  if (re === null) return;\n"
"  var rx, iv = [], sum = 0, end = -1;\n"
"  try { rx = new RegExp(re); } catch (e) { details.textContent = 'bad expression'; return; }\n"
"  fr.forEach(function (g) {\n"
"    var m = re !== '' && rx.test(g.getAttribute('data-name'));\n"
"    if (m) { g.classList.add('match'); iv.push([num(g, 's'), num(g, 's') + num(g, 'n')]); }\n"
"    else g.classList.remove('match');\n"
"  });\n"
"  iv.sort(function (a, b) { return a[0] - b[0]; });\n"
"  iv.forEach(function (v) {\n"
"    if (v[1] > end) { sum += v[1] - Math.max(v[0], end); end = v[1]; }\n"
"  });\n"
"  document.getElementById('matched').textContent =\n"
"    re === '' ? '' : 'Matched: ' + (100 * sum / tot).toFixed(2) + '%';\n"
"}\n"
"function init() {\n"
"  fr = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
"  tot = +svg.getAttribute('data-total'); W = +svg.getAttribute('width');\n"
"  details = document.getElementById('details');\n"
"  fr.forEach(function (g) {\n"
"    var t = g.querySelector('title').textContent;\n"
"    g.addEventListener('click', function (e) { zoom(g); e.stopPropagation(); });\n"
"    g.addEventListener('mouseover', function () { details.textContent = t; });\n"
"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"  });\n"
"  document.getElementById('reset').addEventListener('click', reset);\n"
"  document.getElementById('search').addEventListener('click', function () { search(); });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if (e.key === 'Escape') reset();\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
"  });\n"
"  svg.setAttribute('data-ready', String(fr.length));\n"
"}\n"
"window.addEventListener('load', init);\n";

bool ha_flamegraph_svg(const char *folded, const char *title, GString *out, GError **error)
{
	Node *root = node_new("all");
	g_auto(GStrv) lines = g_strsplit(folded, "\n", -1);
	Layout l = { .o = out };
	bool ok = false;
	int depth = 0;

	for (guint i = 0; lines[i]; i++) {
		char *sp = strrchr(lines[i], ' ');
		guint64 n;

		if (!*lines[i])
			continue;
		if (!sp || !g_ascii_string_to_unsigned(sp + 1, 10, 0, G_MAXUINT64, &n, NULL)) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
				    "folded line %u is not 'STACK COUNT': %.80s", i + 1, lines[i]);
			goto out;
		}
		*sp = '\0';
		root->count += n;
		{
			g_auto(GStrv) fr = g_strsplit(lines[i], ";", -1);
			Node *at = root;

			guint j;

			for (j = 0; fr[j]; j++) {
				at = node_kid(at, fr[j]);
				at->count += n;
			}
			depth = MAX(depth, (int)j);
		}
	}
	l.total = MAX(root->count, 1);
	l.min_count = min_count(root, l.total);
	l.height = FG_TOP + (depth + 1) * FG_FRAME + FG_BOTTOM;
	g_string_append_printf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\""
		" height=\"%d\" viewBox=\"0 0 %d %d\" data-total=\"%" PRIu64 "\""
		" data-min-count=\"%" PRIu64 "\">\n"
		"<style>\n"
		"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
		"g.f text { pointer-events: none; }\n"
		"g.f rect { stroke: #fff; stroke-width: 0.5; cursor: pointer; }\n"
		"g.f:hover rect { stroke: #000; }\n"
		"g.f.match rect { fill: rgb(220, 0, 220); }\n"
		"g.f.parent rect { opacity: 0.5; }\n"
		"#title { font-size: 17px; }\n"
		"#reset, #search { cursor: pointer; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
		FG_WIDTH, l.height, FG_WIDTH, l.height, root->count, l.min_count, script,
		FG_WIDTH / 2);
	xml_text(out, title);
	g_string_append_printf(out, "</text>\n"
		"<text id=\"reset\" x=\"%d\" y=\"48\" style=\"opacity:0.3\">Reset zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"48\" text-anchor=\"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		FG_PAD, FG_WIDTH - FG_PAD, FG_WIDTH - FG_PAD, l.height - 8, FG_PAD, l.height - 8);
	if (root->count)
		emit(&l, root, 0, 0);
	g_string_append(out, "</svg>\n");
	ok = true;
out:
	node_free(root);
	return ok;
}
