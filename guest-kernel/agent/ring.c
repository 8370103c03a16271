// SPDX-License-Identifier: MIT
/*
 * ring.c - per-CPU trace_pipe_raw reading (see ring.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "log.h"
#include "ring.h"
#include "util.h"

void rings_close(struct rings *rs)
{
	if (!rs)
		return;
	for (uint32_t i = 0; i < rs->count; i++) {
		if (rs->cpus[i].fd >= 0)
			close(rs->cpus[i].fd);
		free(rs->cpus[i].page);
	}
	if (rs->wake_fd >= 0)
		close(rs->wake_fd);
	free(rs->cpus);
	free(rs);
}

int rings_open(const char *tracefs, const uint32_t *cpus, uint32_t count,
	       const struct page_layout *pl, struct rings **ret)
{
	size_t page_size = pl->page_size;
	struct rings *rs;
	char path[4096];
	uint32_t opened = 0;
	int refused_errno = 0;
	struct stat st;
	int r;

	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->wake_fd = -1;
	rs->page_size = page_size;
	rs->pl = pl;
	rs->cpus = calloc(count, sizeof(*rs->cpus));
	if (!rs->cpus) {
		free(rs);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < count; i++)
		rs->cpus[i].fd = -1;
	rs->count = count;
	for (uint32_t i = 0; i < count; i++) {
		struct ring_cpu *c = &rs->cpus[i];

		c->cpu = cpus[i];
		c->page = malloc(page_size);
		if (!c->page) {
			rings_close(rs);
			return -ENOMEM;
		}
		r = path_fmt(path, sizeof(path), "%s/per_cpu/cpu%" PRIu32 "/trace_pipe_raw",
			     tracefs, c->cpu);
		if (r < 0) {
			rings_close(rs);
			return r;
		}
		c->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (c->fd < 0) {
			/* one CPU's ring is no reason to stop tracing the others */
			log_warning("cannot open %s: %s: cpu%" PRIu32 " is not streamed", path,
				    strerror(errno), c->cpu);
			continue;
		}
		opened++;
		/*
		 * RB_CAUGHT_UP is opt-in per open file (patch 0017), so that readers
		 * that do not know it never see it. Without it, read until EAGAIN.
		 */
		if (ioctl(c->fd, TRACE_PIPE_RAW_IOC_CAUGHT_UP, 1UL) == 0)
			c->caught_up_asked = true;
		else
			refused_errno = errno;
	}
	if (opened == 0) {
		log_error("no trace_pipe_raw could be opened");
		rings_close(rs);
		return -ENOENT;
	}
	if (refused_errno)
		log_info("trace_pipe_raw does not flag caught-up pages (%s): every CPU is "
			 "read until EAGAIN", strerror(refused_errno));
	/* A regular (tracefs) trace_pipe is the threshold-free wake-up source. */
	if (path_fmt(path, sizeof(path), "%s/trace_pipe", tracefs) == 0 &&
	    stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		rs->wake_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (rs->wake_fd < 0)
			log_warning("cannot open %s (%s): polling per-CPU files", path,
				    strerror(errno));
	}
	*ret = rs;
	return 0;
}

/* read(2) of @c's file: the bytes read, 0 when nothing is there (EAGAIN) or at its
 * end, -errno on an error; EINTR is retried. Counted in @c. */
static ssize_t read_ready(struct ring_cpu *c, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(c->fd, buf, len);

		c->reads++;
		if (n > 0)
			return n;
		c->empty_reads++;
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		return negerrno();
	}
}

/* A whole page was read into @page: count it, and take its RB_CAUGHT_UP. */
static int page_done(struct rings *rs, struct ring_cpu *c, uint8_t *page,
		     const uint8_t **ret_page)
{
	c->pages++;
	c->caught_up = rs->pl && page_take_caught_up(rs->pl, page);
	if (c->caught_up)
		c->caught_up_pages++;
	*ret_page = page;
	return 1;
}

int ring_read_page(struct rings *rs, struct ring_cpu *c, uint8_t *dst,
		   const uint8_t **ret_page)
{
	c->caught_up = false;
	if (c->fd < 0)
		return 0;
	while (dst && c->fill == 0) {
		ssize_t n = read_ready(c, dst, rs->page_size);

		if (n <= 0)
			return (int)n;
		c->bytes += (size_t)n;
		if ((size_t)n == rs->page_size)
			return page_done(rs, c, dst, ret_page);
		/* short: the rest of this page comes with the next reads */
		memcpy(c->page, dst, (size_t)n);
		c->fill = (size_t)n;
	}
	while (c->fill < rs->page_size) {
		ssize_t n = read_ready(c, c->page + c->fill, rs->page_size - c->fill);

		/* 0: empty (a failed page read) or a fake tree's EOF */
		if (n <= 0)
			return (int)n;
		c->fill += (size_t)n;
		c->bytes += (size_t)n;
	}
	c->fill = 0;
	return page_done(rs, c, c->page, ret_page);
}
