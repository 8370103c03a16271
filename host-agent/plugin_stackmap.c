// SPDX-License-Identifier: MIT
/*
 * plugin_stackmap.c - a libtraceevent plugin that prints the stack of a stack_id
 * event, for trace.dat files recorded inside a guest with plain `trace-cmd record`
 * (trace-cmd report and KernelShark load it like the plugins libtraceevent ships).
 *
 * The stackmap kernel records ftrace/stack_id events (TRACE_STACK_ID, one int
 * field `stack_id`) instead of whole stacks; the stacks are in the guest's map,
 * which the user saves with the trace: `cat <tracefs>/stack_map_bin > map.bin`
 * (the seed's v1 binary export, PROTOCOL.md 6.2). Given that file,
 *
 *   trace-cmd report -O stackmap:map=map.bin -i trace.dat
 *
 * prints each stack_id event as "<stack_id 0xID>" followed by one "=> function
 * (address)" line per frame, innermost first, as trace-cmd prints kernel_stack.
 * An id the map does not hold is said to be so; when its tag (bits 20-30, the map
 * epoch it was issued in) is not the tag of the map's ids, the event is from
 * another epoch than the file (the map was reset between the event and the dump),
 * and the line says that instead of guessing. Without -O the events print their id
 * and how to name the map.
 *
 * Install: into libtraceevent's plugin directory (meson install does), or point
 * TRACEEVENT_PLUGIN_DIR at the directory holding plugin_stackmap.so.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include "proto.h"

struct sm_stack {
	uint32_t id;
	uint32_t nr;
	uint64_t *ips;
};

static struct {
	bool loaded;		/* tried to load the option's file */
	char *path;
	char *error;		/* why the file is not usable, or NULL */
	struct sm_stack *stacks;	/* sorted by id */
	uint32_t nr;
	int tag;		/* tag of the map's ids, -1 when mixed or empty */
} sm;

struct tep_plugin_option TEP_PLUGIN_OPTIONS[] = {
	{
		.name = "map",
		.plugin_alias = "stackmap",
		.description = "the guest's stack_map_bin file (stack_id -> stack)",
		.value = "",	/* a string option: libtraceevent sets only non-NULL ones */
	},
	{ .name = NULL },
};

static int stack_cmp(const void *a, const void *b)
{
	const struct sm_stack *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void sm_clear(void)
{
	for (uint32_t i = 0; i < sm.nr; i++)
		free(sm.stacks[i].ips);
	free(sm.stacks);
	free(sm.path);
	free(sm.error);
	memset(&sm, 0, sizeof(sm));
	sm.tag = -1;
}

static void sm_fail(const char *what, int err)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s: %s: %s", sm.path, what, strerror(err));
	sm.error = strdup(buf);
}

/* Read the whole file named by the option (once): every length in it is checked by
 * smp_bin_next() against the file's size. */
static void sm_load(void)
{
	const char *path = TEP_PLUGIN_OPTIONS[0].value;
	struct smp_bin it;
	struct smp_bin_entry e;
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f;
	int r, tag = -2;

	sm.loaded = true;
	if (!path || !*path)
		return;
	sm.path = strdup(path);
	f = fopen(path, "rb");
	if (!f) {
		sm_fail("cannot open", errno);
		return;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			uint8_t *nb = realloc(buf, cap ? 2 * cap : 65536);

			if (!nb) {
				sm_fail("reading", ENOMEM);
				goto out;
			}
			buf = nb;
			cap = cap ? 2 * cap : 65536;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		sm_fail("reading", EIO);
		goto out;
	}
	r = smp_bin_open(&it, buf, len);
	if (r < 0) {
		sm_fail("not a stack_map_bin v1 file", -r);
		goto out;
	}
	sm.stacks = calloc(it.nr_stacks ? it.nr_stacks : 1, sizeof(*sm.stacks));
	if (!sm.stacks) {
		sm_fail("reading", ENOMEM);
		goto out;
	}
	while ((r = smp_bin_next(&it, &e)) == 1) {
		struct sm_stack *s = &sm.stacks[sm.nr];

		s->ips = malloc((e.nr ? e.nr : 1) * sizeof(uint64_t));
		if (!s->ips) {
			sm_fail("reading", ENOMEM);
			goto out;
		}
		s->id = e.stack_id;
		s->nr = e.nr;
		for (uint32_t i = 0; i < e.nr; i++)
			s->ips[i] = smp_bin_ip(&e, i);
		sm.nr++;
		if (tag == -2)
			tag = (int)smp_id_tag(e.stack_id);
		else if (tag != (int)smp_id_tag(e.stack_id))
			tag = -1;
	}
	if (r < 0) {
		sm_fail("truncated entry", -r);
		goto out;
	}
	sm.tag = tag < 0 ? -1 : tag;
	qsort(sm.stacks, sm.nr, sizeof(*sm.stacks), stack_cmp);
out:
	free(buf);
	fclose(f);
}

static int stack_id_handler(struct trace_seq *s, struct tep_record *record,
			    struct tep_event *event, void *context)
{
	struct tep_handle *tep = event->tep;
	unsigned long long val;
	struct sm_stack key, *st;
	uint32_t id;

	(void)context;
	if (tep_get_field_val(s, event, "stack_id", record, &val, 1))
		return 0;
	id = (uint32_t)val;
	if (!sm.loaded)
		sm_load();
	trace_seq_printf(s, "<stack_id 0x%08x>", id);
	if (!sm.path) {
		trace_seq_puts(s, " (name the guest's stack_map_bin: -O stackmap:map=FILE)");
		return 0;
	}
	if (sm.error) {
		trace_seq_printf(s, " (%s)", sm.error);
		return 0;
	}
	key.id = id;
	st = bsearch(&key, sm.stacks, sm.nr, sizeof(*sm.stacks), stack_cmp);
	if (!st) {
		if (sm.tag >= 0 && (uint32_t)sm.tag != smp_id_tag(id))
			trace_seq_printf(s, " from another epoch: tag %u, the map's ids have tag"
					 " %d", smp_id_tag(id), sm.tag);
		else
			trace_seq_puts(s, " not in the map");
		return 0;
	}
	for (uint32_t i = 0; i < st->nr; i++) {
		const char *fn = tep_find_function(tep, st->ips[i]);

		if (fn)
			trace_seq_printf(s, "\n=> %s (%llx)", fn, (unsigned long long)st->ips[i]);
		else
			trace_seq_printf(s, "\n=> %llx", (unsigned long long)st->ips[i]);
	}
	return 0;
}

int TEP_PLUGIN_LOADER(struct tep_handle *tep)
{
	sm.tag = -1;
	tep_plugin_add_options("stackmap", TEP_PLUGIN_OPTIONS);
	tep_register_event_handler(tep, -1, "ftrace", "stack_id", stack_id_handler, NULL);
	return 0;
}

void TEP_PLUGIN_UNLOADER(struct tep_handle *tep)
{
	tep_unregister_event_handler(tep, -1, "ftrace", "stack_id", stack_id_handler, NULL);
	tep_plugin_remove_options(TEP_PLUGIN_OPTIONS);
	sm_clear();
}
