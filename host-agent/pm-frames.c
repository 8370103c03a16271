// SPDX-License-Identifier: MIT
/* pm-frames.c - frames rebuilt from a crashed guest's memory (see pm-frames.h). */
#include "pm-frames.h"

#include <gio/gio.h>

#include "proto.h"

void ha_pm_frames_init(HaPmFrames *f, uint64_t first_seq)
{
	f->out = g_byte_array_new();
	f->seq = first_seq;
	f->frames = 0;
}

void ha_pm_frames_clear(HaPmFrames *f)
{
	g_clear_pointer(&f->out, g_byte_array_unref);
}

bool ha_pm_frames_add(HaPmFrames *f, uint8_t type, const void *payload, size_t len,
		      GError **error)
{
	guint at = f->out->len;
	long n;

	if (len > SMP_MAX_PAYLOAD || !smp_seq_next_ok(f->seq)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "a recovered %s frame of %zu bytes at seq %" G_GUINT64_FORMAT
			    " cannot be sealed", smp_type_name(type), len, f->seq);
		return false;
	}
	g_byte_array_set_size(f->out, at + SMP_HDR_SIZE + (guint)len);
	n = smp_frame_encode(f->out->data + at, SMP_HDR_SIZE + len, type, 0, f->seq,
			     payload, len);
	g_assert(n == (long)(SMP_HDR_SIZE + len));
	f->seq++;
	f->frames++;
	return true;
}

bool ha_pm_frames_add_deltas(HaPmFrames *f, const uint8_t *buf, size_t len,
			     uint64_t *ret_stacks, uint64_t *ret_epochs, GError **error)
{
	size_t off = 0, run = 0, run_len = 0;
	struct smp_delta_rec rec;
	int r;

	for (;;) {
		size_t at = off;

		r = smp_delta_next(buf, len, &off, &rec);
		if (r == 1 && rec.kind == SMP_DELTA_STACK &&
		    run_len + (off - at) <= SMP_MAX_PAYLOAD) {
			if (!run_len)
				run = at;
			run_len += off - at;
			if (ret_stacks)
				(*ret_stacks)++;
			continue;
		}
		/* the run ends here: before an epoch record, a full frame, or the end */
		if (run_len && !ha_pm_frames_add(f, SMP_STACKS, buf + run, run_len, error))
			return false;
		run_len = 0;
		if (r != 1)
			break;
		if (rec.kind == SMP_DELTA_EPOCH) {
			if (!ha_pm_frames_add(f, SMP_EPOCH, buf + at, off - at, error))
				return false;
			if (ret_epochs)
				(*ret_epochs)++;
		} else {
			/* a stack record that did not fit the run: it starts the next one */
			run = at;
			run_len = off - at;
			if (ret_stacks)
				(*ret_stacks)++;
		}
	}
	if (r < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "an invalid map record at offset %zu of %zu", off, len);
		return false;
	}
	return true;
}
