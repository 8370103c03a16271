/* SPDX-License-Identifier: MIT */
/*
 * guest-formats.h - tracefs format texts of a linux-6.1 x86_64 guest with the
 * stackmap patches, and the event ids they declare, for the synthetic guest and the
 * unit tests.
 */
#ifndef GUEST_FORMATS_H
#define GUEST_FORMATS_H

#define GF_ID_KERNEL_STACK	4	/* TRACE_STACK in 6.1's enum trace_type */
#define GF_ID_PRINT		5	/* TRACE_PRINT */
#define GF_ID_STACK_ID		20	/* TRACE_STACK_ID: after TRACE_FUNC_REPEATS (19) */
#define GF_ID_KMALLOC		473	/* a dynamic trace-event id; any is fine */

struct gf_format {
	const char *name;	/* FORMAT frame name */
	const char *text;
};

/* header_page, header_event, ftrace/stack_id, ftrace/kernel_stack, kmem/kmalloc */
extern const struct gf_format gf_formats[];
extern const unsigned int gf_nr_formats;
/* ftrace/print (trace_marker writes), not among gf_formats[] */
extern const struct gf_format gf_print;

#endif
