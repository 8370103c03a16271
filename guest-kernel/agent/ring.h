/* SPDX-License-Identifier: MIT */
/*
 * ring.h - reading the per-CPU ring buffers through per_cpu/cpuN/trace_pipe_raw.
 *
 * Each CPU's file is opened O_NONBLOCK and read with read() one page at a time: in 6.1
 * read() hands out partial pages (the events committed so far, copied into a page of
 * their own) and fails with EAGAIN when the CPU's buffer is empty, whereas splice()
 * waits for full pages. A short read is completed by the next ones (the kernel hands
 * out the rest of the same page), so a page is only returned whole.
 *
 * The caller may give the place where the page should end up (a frame reserved in the
 * window): a whole page read in one read() lands there with no copy of its own. Only
 * the rare short read goes through the CPU's own page buffer.
 *
 * Caught up: a kernel with guest-kernel patch 0017 sets RB_CAUGHT_UP in the commit word
 * of a page when the read that returned it consumed every event committed on its CPU
 * before it (the copy of the page the writer is on, up to that page's commit), for an
 * open file that asked for it with ioctl(TRACE_PIPE_RAW_IOC_CAUGHT_UP, 1), which
 * rings_open() issues on each CPU's file. The next read would only fail with EAGAIN,
 * so the caller may leave it out until its next round. The flag is cleared in the page
 * here: no frame ever carries it. Older kernels fail the ioctl (ENOTTY) and never set
 * the flag, and every page is read until EAGAIN, as before.
 *
 * Wake-ups: poll() on trace_pipe_raw honours buffer_percent (50% by default), which
 * would delay data by up to half a buffer; the all-CPU `trace_pipe` file polls with no
 * threshold, so it is the wake-up source when it exists (it is never read). Otherwise
 * (fake trees in tests) the per-CPU fds are polled.
 */
#ifndef SMG_RING_H
#define SMG_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "stream.h"

/* RB_CAUGHT_UP (stream.h; TRACE_PIPE_RAW_CAUGHT_UP of the patched kernel's
 * include/uapi/linux/trace_pipe_raw.h) is set only for an open file that asked with
 * this ioctl, argument 1 (the same header's TRACE_PIPE_RAW_IOC_CAUGHT_UP). */
#define TRACE_PIPE_RAW_IOC_CAUGHT_UP _IO('R', 0x30)

struct ring_cpu {
	uint32_t cpu;
	int fd;
	uint8_t *page;
	size_t fill;		/* bytes of the page read so far */
	uint64_t pages;		/* pages read */
	uint64_t bytes;		/* bytes read */
	uint64_t caught_up_pages;	/* pages read with RB_CAUGHT_UP */
	uint64_t reads;		/* read() calls */
	uint64_t empty_reads;	/* ... that returned no bytes (EAGAIN, EOF, EINTR) */
	bool caught_up;		/* the last page read had RB_CAUGHT_UP (cleared in it) */
	bool caught_up_asked;	/* the kernel took TRACE_PIPE_RAW_IOC_CAUGHT_UP on fd */
};

struct rings {
	struct ring_cpu *cpus;
	uint32_t count;
	size_t page_size;
	int wake_fd;		/* trace_pipe, or -1 */
	/* the pages' layout (the agent's); NULL: RB_CAUGHT_UP is neither looked for nor
	 * cleared */
	const struct page_layout *pl;
};

/* Open trace_pipe_raw of each CPU in @cpus, pages of layout @pl (kept: it must outlive
 * the rings), and ask each for RB_CAUGHT_UP (a kernel without it: one info line). Free
 * with rings_close(). */
int rings_open(const char *tracefs, const uint32_t *cpus, uint32_t count,
	       const struct page_layout *pl, struct rings **ret);
void rings_close(struct rings *rs);

/*
 * Read the next whole page of @c. 1 and *ret_page (valid until the next call), 0 when
 * the buffer is empty for now, -errno. With @dst (rs->page_size bytes), a page read
 * whole in one read() is read into @dst and *ret_page is @dst; otherwise *ret_page is
 * the CPU's own page buffer (a short read, completed by the next ones). With
 * rs->pl set, c->caught_up tells whether the page had RB_CAUGHT_UP, which is
 * cleared in it.
 */
int ring_read_page(struct rings *rs, struct ring_cpu *c, uint8_t *dst,
		   const uint8_t **ret_page);

#endif
