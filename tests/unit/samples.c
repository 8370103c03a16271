// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "proto.h"
#include "samples.h"

const uint8_t smp_sample_types[] = {
	SMP_HELLO, SMP_FORMAT, SMP_KSYMS, SMP_MODULES, SMP_PAGE, SMP_STACKS,
	SMP_EPOCH, SMP_LOST, SMP_STATS, SMP_BYE, SMP_WELCOME, SMP_ACK,
	SMP_TIME, SMP_TIME_REPLY,
};
const size_t smp_sample_nr_types = sizeof(smp_sample_types);

static const char format_text[] =
	"name: stack_id\nID: 15\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int stack_id;\toffset:8;\tsize:4;\tsigned:1;\n";
static const char ksyms_text[] =
	"ffffffff81000000 T _text\nffffffff81001000 T do_one_initcall\n"
	"ffffffff81234560 t kmem_cache_alloc\n";

long smp_sample_payload(uint8_t type, unsigned variant, uint8_t *buf, size_t cap)
{
	switch (type) {
	case SMP_HELLO: {
		struct smp_hello h = {
			.stream_id = 0x1122334455667788ull + variant,
			.text_addr = 0xffffffff81000000ull,
			.nr_cpus = 2 + variant % 4, .page_size = 4096, .map_bits = 14,
			.max_depth = 64, .map_epoch = variant, .flags = SMP_HELLO_STACKMAP,
			.release = "6.1.0-stackmap", .release_len = 14,
			.build_id = (const uint8_t *)"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"
				    "\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14",
			.build_id_len = 20,
			.trace_clock = "local", .clock_len = 5,
		};
		/* variants with bit 1 set ask for 1.5's ACK pacing */
		if (variant & 2) {
			h.ack_ms = 100;
			h.ack_bytes = 2u << 20;
		}
		memset(h.boot_id, 0xb0 + (int)(variant & 0xf), 16);
		return smp_hello_encode(&h, buf, cap);
	}
	case SMP_FORMAT: {
		struct smp_format f = { .name = "ftrace/stack_id", .name_len = 15,
					.text = format_text, .text_len = sizeof(format_text) - 1 };
		return smp_format_encode(&f, buf, cap);
	}
	case SMP_KSYMS:
	case SMP_MODULES: {
		struct smp_text t = { .generation = variant, .chunk = variant * 3,
				      .flags = variant & 1 ? SMP_TEXT_LAST : 0,
				      .text = ksyms_text,
				      .text_len = sizeof(ksyms_text) - 1 };
		return smp_text_encode(&t, buf, cap);
	}
	case SMP_PAGE: {
		size_t data_len = 16 + (variant * 977) % 4080;
		struct smp_page p = { .cpu = variant % 2, .data = NULL, .data_len = data_len };

		if (cap < SMP_PAGE_FIXED + data_len)
			return -ENOSPC;
		for (size_t i = 0; i < data_len; i++)
			buf[SMP_PAGE_FIXED + i] = (uint8_t)(i * 31 + variant);
		return smp_page_encode(&p, buf, cap);
	}
	case SMP_STACKS: {
		size_t off = 0;

		for (unsigned r = 0; r < 1 + variant % 5; r++) {
			uint64_t ips[64];
			uint32_t nr = 1 + (r * 13 + variant) % 64;
			long n;

			for (uint32_t i = 0; i < nr; i++)
				ips[i] = 0xffffffff81000000ull + (uint64_t)(r + 1) * 0x1000 + i * 16;
			n = smp_delta_put_stack(buf + off, cap - off,
						smp_id_make(variant, r + 7), 1 + r, ips, nr);
			if (n < 0)
				return n;
			off += (size_t)n;
		}
		return (long)off;
	}
	case SMP_EPOCH:
		return smp_delta_put_epoch(buf, cap, 2048 + variant, 1000000ull * variant);
	case SMP_LOST: {
		struct smp_lost_cpu cpus[4] = {
			{ 0, 10, 1, 2, 1000 }, { 1, 0, 0, 0, 900 },
			{ 2, 5, 0, 3, 10 }, { 3, 0, 0, 0, 1 },
		};
		struct smp_lost l = { .nr = 1 + variant % 4, .agent_dropped_frames = variant,
				      .agent_dropped_bytes = 4096ull * variant };
		return smp_lost_encode(&l, cpus, buf, cap);
	}
	case SMP_STATS: {
		struct smp_stat s[] = {
			{ SMP_STAT_MAP_ENTRIES, 123 }, { SMP_STAT_MAP_CAPACITY, 16384 },
			{ SMP_STAT_MAP_SUCCESSES, 99999 }, { SMP_STAT_MAP_DROPS, 7 },
			{ SMP_STAT_MAP_EPOCH, variant }, { 999, 1 },
		};
		return smp_stats_encode(s, 1 + variant % 6, buf, cap);
	}
	case SMP_BYE:
		return smp_bye_encode(variant & 1, buf, cap);
	case SMP_WELCOME: {
		struct smp_welcome w = { .resume_seq = 1 + variant, .max_payload = SMP_MAX_PAYLOAD };
		return smp_welcome_encode(&w, buf, cap);
	}
	case SMP_ACK:
		return smp_ack_encode(variant * 1000, buf, cap);
	case SMP_TIME:
		return smp_time_encode(0x0123456789abcdefull + variant, buf, cap);
	case SMP_TIME_REPLY: {
		struct smp_time_reply t = { .probe_id = 77 + variant,
					    .status = variant & 1 ? -EBADF : 0 };
		return smp_time_reply_encode(&t, buf, cap);
	}
	}
	return -EINVAL;
}
