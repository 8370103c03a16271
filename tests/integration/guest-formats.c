// SPDX-License-Identifier: MIT
/*
 * guest-formats.c - format files as linux-6.1 prints them:
 *  header_page   ring_buffer_print_page_header() (kernel/trace/ring_buffer.c)
 *  header_event  ring_buffer_print_entry_header()
 *  events        f_show() (kernel/trace/trace_events.c) for FTRACE_ENTRY
 *                kernel_stack (trace_entries.h), the stackmap series' stack_id, and
 *                TRACE_EVENT(kmalloc) (include/trace/events/kmem.h). kmalloc's
 *                show_gfp_flags() table is shortened to a few of its entries.
 */
#include "guest-formats.h"

#define COMMON \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n" \
	"\n"

#define STR2(x) #x
#define STR(x) STR2(x)

const struct gf_format gf_formats[] = {
	{ "header_page",
	  "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	  "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	  "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	  "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n" },
	{ "header_event",
	  "# compressed entry header\n"
	  "\ttype_len    :    5 bits\n"
	  "\ttime_delta  :   27 bits\n"
	  "\tarray       :   32 bits\n"
	  "\n"
	  "\tpadding     : type == 29\n"
	  "\ttime_extend : type == 30\n"
	  "\ttime_stamp : type == 31\n"
	  "\tdata max type_len  == 28\n" },
	{ "ftrace/stack_id",
	  "name: stack_id\n"
	  "ID: " STR(GF_ID_STACK_ID) "\n"
	  "format:\n"
	  COMMON
	  "\tfield:int stack_id;\toffset:8;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"<stack_id %d>\", REC->stack_id\n" },
	{ "ftrace/kernel_stack",
	  "name: kernel_stack\n"
	  "ID: " STR(GF_ID_KERNEL_STACK) "\n"
	  "format:\n"
	  COMMON
	  "\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	  "\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
	  "\n"
	  "print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n"
	  "\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1],"
	  " (void *)REC->caller[2], (void *)REC->caller[3], (void *)REC->caller[4],"
	  " (void *)REC->caller[5], (void *)REC->caller[6], (void *)REC->caller[7]\n" },
	{ "kmem/kmalloc",
	  "name: kmalloc\n"
	  "ID: " STR(GF_ID_KMALLOC) "\n"
	  "format:\n"
	  COMMON
	  "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
	  "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
	  "\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;\n"
	  "\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;\n"
	  "\n"
	  "print fmt: \"call_site=%pS ptr=%p bytes_req=%zu bytes_alloc=%zu gfp_flags=%s"
	  " node=%d accounted=%s\", (void *)REC->call_site, REC->ptr, REC->bytes_req,"
	  " REC->bytes_alloc, (REC->gfp_flags) ? __print_flags(REC->gfp_flags, \"|\","
	  " {(unsigned long)(((( gfp_t)(0x400u|0x800u)) | (( gfp_t)0x40u) | (( gfp_t)0x80u)"
	  ")), \"GFP_KERNEL\"}, {(unsigned long)((( gfp_t)0x20u)),"
	  " \"__GFP_HIGH\"}, {(unsigned long)((( gfp_t)0x100u)), \"__GFP_ZERO\"}) : \"none\","
	  " REC->node, (0 && (REC->gfp_flags & (unsigned long)(( gfp_t)0x400000u))) ?"
	  " \"true\" : \"false\"\n" },
};

const unsigned int gf_nr_formats = sizeof(gf_formats) / sizeof(gf_formats[0]);

/* TRACE_PRINT's format (kernel/trace/trace_entries.h): trace_marker writes, and the
 * guest agent's clock-probe markers among them. */
const struct gf_format gf_print = {
	"ftrace/print",
	"name: print\n"
	"ID: " STR(GF_ID_PRINT) "\n"
	"format:\n"
	COMMON
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n"
	"\n"
	"print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n"
};
