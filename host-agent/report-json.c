// SPDX-License-Identifier: MIT
/* report-json.c - the reports' JSON through json-glib (see report-json.h). */
#include <stdbool.h>
#include <string.h>

#include "report-json.h"

/* @s, or a valid UTF-8 copy of it in *@fixed (g_free()) when it is not. */
static const char *valid_utf8(const char *s, char **fixed)
{
	if (!s)
		return "";
	if (g_utf8_validate(s, -1, NULL))
		return s;
	*fixed = g_utf8_make_valid(s, -1);
	return *fixed;
}

void ha_json_add_str(JsonBuilder *b, const char *s)
{
	g_autofree char *fixed = NULL;

	json_builder_add_string_value(b, valid_utf8(s, &fixed));
}

void ha_json_add_u64(JsonBuilder *b, uint64_t v)
{
	json_builder_add_int_value(b, v > INT64_MAX ? INT64_MAX : (gint64)v);
}

void ha_json_member_str(JsonBuilder *b, const char *name, const char *s)
{
	json_builder_set_member_name(b, name);
	ha_json_add_str(b, s);
}

void ha_json_member_int(JsonBuilder *b, const char *name, int64_t v)
{
	json_builder_set_member_name(b, name);
	json_builder_add_int_value(b, v);
}

void ha_json_member_u64(JsonBuilder *b, const char *name, uint64_t v)
{
	json_builder_set_member_name(b, name);
	ha_json_add_u64(b, v);
}

static char *node_to_string(JsonNode *n, gsize *ret_len)
{
	g_autoptr(JsonGenerator) g = json_generator_new();

	json_generator_set_root(g, n);
	return json_generator_to_data(g, ret_len);
}

char *ha_json_to_string(JsonBuilder *b)
{
	g_autoptr(JsonNode) root = json_builder_get_root(b);

	return node_to_string(root, NULL);
}

void ha_json_append(GString *out, JsonBuilder *b)
{
	g_autoptr(JsonNode) root = json_builder_get_root(b);
	gsize len;
	g_autofree char *s = node_to_string(root, &len);

	g_string_append_len(out, s, (gssize)len);
}

void ha_report_json_str(GString *out, const char *s)
{
	g_autofree char *fixed = NULL;
	g_autoptr(JsonNode) n = json_node_init_string(json_node_alloc(), valid_utf8(s, &fixed));
	gsize len;
	g_autofree char *t = node_to_string(n, &len);

	g_string_append_len(out, t, (gssize)len);
}

void ha_json_array_begin(HaJsonArray *a, GString *out, JsonBuilder *head,
			 const char *member)
{
	*a = (HaJsonArray){ .out = out, .in_object = member != NULL };
	if (member) {
		g_autoptr(JsonBuilder) own = NULL;
		g_autofree char *s = NULL;
		size_t len;

		if (!head) {
			head = own = json_builder_new();
			json_builder_begin_object(head);
		}
		/* the head's members, then the array's name: `{"a":1` + `,"member":[` */
		json_builder_end_object(head);
		s = ha_json_to_string(head);
		len = strlen(s);
		g_assert(len >= 2 && s[len - 1] == '}');
		g_string_append_len(out, s, (gssize)len - 1);
		if (len > 2)
			g_string_append_c(out, ',');
		ha_report_json_str(out, member);
		g_string_append(out, ":[");
	} else {
		g_string_append_c(out, '[');
	}
}

void ha_json_array_add(HaJsonArray *a, JsonBuilder *el)
{
	if (a->n++)
		g_string_append_c(a->out, ',');
	ha_json_append(a->out, el);
}

void ha_json_array_end(HaJsonArray *a)
{
	g_string_append(a->out, a->in_object ? "]}\n" : "]\n");
}
