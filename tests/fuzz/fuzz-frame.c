// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the frame decoder fed the input in chunks whose sizes come from the
 * input itself, and every delivered frame through its typed payload decoder, exactly as
 * the host agent does with a guest's bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void payload(const struct smp_frame *f)
{
	const uint8_t *p = f->payload;
	size_t len = f->len, off = 0;
	volatile uint64_t sink = 0;

	if (smp_msg_check_size(f->type, len))
		return;
	switch (f->type) {
	case SMP_HELLO: {
		struct smp_hello m;

		if (!smp_hello_decode(&m, p, len))
			sink += m.release[m.release_len - 1] + m.trace_clock[0];
		break;
	}
	case SMP_FORMAT: {
		struct smp_format m;

		if (!smp_format_decode(&m, p, len))
			sink += m.text[m.text_len - 1] + m.name[m.name_len - 1];
		break;
	}
	case SMP_KSYMS:
	case SMP_MODULES: {
		struct smp_text m;

		if (!smp_text_decode(&m, p, len) && m.text_len)
			sink += m.text[m.text_len - 1];
		break;
	}
	case SMP_PAGE: {
		struct smp_page m;

		if (!smp_page_decode(&m, p, len))
			sink += m.data[m.data_len - 1];
		break;
	}
	case SMP_STACKS:
	case SMP_EPOCH: {
		struct smp_delta_rec r;

		while (smp_delta_next(p, len, &off, &r) == 1)
			if (r.kind == SMP_DELTA_STACK)
				sink += smp_delta_ip(&r, r.nr - 1);
		break;
	}
	case SMP_LOST: {
		struct smp_lost m;
		struct smp_lost_cpu c;

		if (!smp_lost_decode(&m, p, len))
			for (uint32_t i = 0; i < m.nr; i++) {
				smp_lost_cpu(&m, i, &c);
				sink += c.overrun;
			}
		break;
	}
	case SMP_STATS: {
		uint32_t nr;
		struct smp_stat s;

		if (!smp_stats_decode(&nr, p, len))
			for (uint32_t i = 0; i < nr; i++) {
				smp_stats_get(p, i, &s);
				sink += s.value;
			}
		break;
	}
	case SMP_BYE: {
		uint32_t r;

		if (!smp_bye_decode(&r, p, len))
			sink += r;
		break;
	}
	case SMP_WELCOME: {
		struct smp_welcome w;

		if (!smp_welcome_decode(&w, p, len))
			sink += w.resume_seq;
		break;
	}
	case SMP_ACK: {
		uint64_t a;

		if (!smp_ack_decode(&a, p, len))
			sink += a;
		break;
	}
	case SMP_TIME: {
		uint64_t id;

		if (!smp_time_decode(&id, p, len))
			sink += id;
		break;
	}
	case SMP_TIME_REPLY: {
		struct smp_time_reply r;

		if (!smp_time_reply_decode(&r, p, len))
			sink += r.probe_id;
		break;
	}
	}
	/* the marker parser sees what a guest's print event carries */
	{
		uint64_t id;

		if (!smp_time_marker_parse((const char *)p, len, &id))
			sink += id;
	}
	(void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct smp_decoder *d;
	size_t pos = 0;
	unsigned step;

	if (!d)
		d = smp_decoder_new(64 * 1024);	/* smaller buffer: more compaction paths */
	smp_decoder_reset(d);
	if (size < 1)
		return 0;
	step = 1 + data[0] % 97;
	data++;
	size--;
	while (pos < size) {
		size_t want = size - pos < step ? size - pos : step;
		struct smp_frame f;
		int r;

		pos += smp_decoder_feed(d, data + pos, want);
		while ((r = smp_decoder_next(d, &f, NULL)) != 0) {
			if (r == -EPROTONOSUPPORT)
				return 0;
			if (r == 1)
				payload(&f);
		}
		step = step * 7 % 4099 + 1;
	}
	return 0;
}
