/* SPDX-License-Identifier: MIT */
/*
 * report-json.h - the JSON every report prints, written by json-glib.
 *
 * A report's document is built with a JsonBuilder and written by a JsonGenerator
 * (compact: no spaces, the bytes the tests and the fleet's reports compare). Strings
 * come from the guest, so they are not trusted to be UTF-8: ha_json_add_str() replaces
 * every invalid sequence by U+FFFD (g_utf8_make_valid()), and the output is valid JSON
 * whatever the guest sent; valid UTF-8 (a non-ASCII symbol, comm or kernel release)
 * passes unchanged. JSON integers are the int64 json-glib holds: an unsigned count above
 * INT64_MAX (only a hostile guest sends one) is written as INT64_MAX.
 *
 * Reports of unbounded length (events --limit 1000000000) are written one element at a
 * time: HaJsonArray writes an object's other members, then the array that is its last
 * member element by element, each element its own JsonBuilder tree, so that memory holds
 * one event's tree, not the report's. The bytes are those one generator would write for
 * the whole document.
 *
 * Warnings never go into this output: they are for stderr / the log.
 */
#ifndef HA_REPORT_JSON_H
#define HA_REPORT_JSON_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

/* @s (NULL: "") as a string value, invalid UTF-8 replaced by U+FFFD. */
void ha_json_add_str(JsonBuilder *b, const char *s);
/* @v as an integer value, INT64_MAX when it is larger. */
void ha_json_add_u64(JsonBuilder *b, uint64_t v);

/* Members of the object being built: name and value in one call. */
void ha_json_member_str(JsonBuilder *b, const char *name, const char *s);
void ha_json_member_int(JsonBuilder *b, const char *name, int64_t v);
void ha_json_member_u64(JsonBuilder *b, const char *name, uint64_t v);

/* Append @b's root, compact, to @out. */
void ha_json_append(GString *out, JsonBuilder *b);
/* @b's root, compact: g_free(). */
char *ha_json_to_string(JsonBuilder *b);

/* @s as a JSON string (as ha_json_add_str() gives it), appended to @out. */
void ha_report_json_str(GString *out, const char *s);

/*
 * An array written element by element: ha_json_array_begin() with @head an object
 * builder whose object is still open (its members come first; NULL: none) and @member
 * the array's name writes `{...,"member":[`; with @member NULL the document is the bare
 * array (`[`).
 * ha_json_array_add() appends one element (@el's root), ha_json_array_end() closes the
 * array (and the object) and ends the line.
 */
typedef struct {
	GString *out;
	guint n;
	bool in_object;
} HaJsonArray;

void ha_json_array_begin(HaJsonArray *a, GString *out, JsonBuilder *head,
			 const char *member);
void ha_json_array_add(HaJsonArray *a, JsonBuilder *el);
void ha_json_array_end(HaJsonArray *a);

#endif /* HA_REPORT_JSON_H */
