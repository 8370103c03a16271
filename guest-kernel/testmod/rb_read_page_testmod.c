// SPDX-License-Identifier: GPL-2.0
/*
 * rb_read_page_testmod: ring_buffer_read_page() on a ring buffer whose every
 * byte is known in advance, for comparing two kernels' page reads.
 *
 * Reading /sys/kernel/debug/rb_read_page_testmod runs a fixed script on a
 * private ring buffer of 8 pages per CPU and prints what each step gave. The
 * buffer's clock is this module's (rbpt_clock()), so every time delta, time
 * extend and absolute time stamp the writer records is the same on every boot,
 * and so are the events' lengths and payloads (a fixed pseudo-random
 * sequence). All of it runs on one CPU, migration disabled. The script, in
 * phases (relative time stamps with small steps; with large steps, so with
 * time extends; absolute time stamps; an overwriting buffer overrun between
 * reads, so with missed events), writes a few events and then reads:
 *   - ring_buffer_read_page() with a length from a few events to a whole page
 *     and "full" set or not: with the writer still on the reader page, of a
 *     page read partially before, or a whole page that is swapped out;
 *   - now and then ring_buffer_consume() of one event;
 * and at the end of each phase reads the buffer empty. Now and then an event
 * is reserved, an event is written from hard interrupt context (an irq_work)
 * while it is, and then it is discarded: it stays in the page as padding, as
 * does the rest of a page that an event did not fit in.
 *
 * One line per step: for a page read its return value, whether the page was
 * swapped or copied, the copy's commit field and time stamp, a CRC32 of the
 * whole page (header, events, the missed-events count and the zeroed rest),
 * whether the buffer is empty after it, and the buffer's counters after it
 * (entries, read, bytes, overrun); for a
 * consume the event's time stamp, length, a CRC of its payload and the lost
 * count. The last line counts what the copies held (data events, time
 * extends, absolute time stamps, padding, pages with missed events), so a
 * test can check that the script covered each.
 *
 * The output depends only on the ring buffer's code: the same module on a
 * kernel with and without guest-kernel patch 0015 (ring_buffer_read_page()
 * copying a run of events at once) prints the same text iff the two read
 * every page the same (tests/e2e, "rb-read-page").
 *
 * Patch 0017's RB_CAUGHT_UP is the one difference a kernel may make on
 * purpose, and only for a caller that asks for it with
 * ring_buffer_read_page_caught_up(): /sys/kernel/debug/rb_read_page_testmod
 * reads with ring_buffer_read_page() (the flag must never show there), and
 * rb_read_page_testmod_caught_up, created when the kernel has that function,
 * runs the same script with it. In either, the flag is taken out of the
 * commit field before the page is walked, printed and hashed, and reported
 * as " caught-up" after the "empty" field of the read's line, for the test to
 * check against it and then remove.
 *
 * ring_buffer_set_clock() and ring_buffer_set_time_stamp_abs() are not
 * exported to modules; they are found through kallsyms_lookup_name(), whose
 * address a kprobe on it gives (a test module only: CONFIG_KPROBES and
 * CONFIG_KALLSYMS, which the guests have). So is
 * ring_buffer_read_page_caught_up(), so that the module loads on a kernel
 * without it too.
 */
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/ring_buffer.h>
#include <linux/irq_work.h>
#include <linux/kprobes.h>
#include <linux/crc32.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <asm/local.h>

#define RBPT_PAGES		8
#define RBPT_ROUNDS		300
#define RBPT_DRAIN_MAX		(4 * RBPT_PAGES)
#define RBPT_MAX_EVENT		1000

/* ring_buffer.c's struct buffer_data_page, as trace_pipe_raw readers see it */
struct rbpt_page {
	u64		time_stamp;
	local_t		commit;
	unsigned char	data[];
};

#define RBPT_MISSED_EVENTS	BIT(31)
#define RBPT_CAUGHT_UP		BIT(29)
#define RBPT_COMMIT_MASK	GENMASK(29, 0)

enum rbpt_phase_flags {
	RBPT_EXTENDS	= 1 << 0,	/* steps of the clock above 2^27 */
	RBPT_ABS	= 1 << 1,	/* absolute time stamps */
	RBPT_OVERWRITE	= 1 << 2,	/* overwrite, overrun between reads */
};

static const struct {
	const char	*name;
	unsigned int	flags;
} rbpt_phases[] = {
	{ "relative",	0 },
	{ "extends",	RBPT_EXTENDS },
	{ "absolute",	RBPT_ABS | RBPT_EXTENDS },
	{ "overwrite",	RBPT_OVERWRITE | RBPT_EXTENDS },
};

static void (*rbpt_set_clock)(struct trace_buffer *buffer, u64 (*clock)(void));
static void (*rbpt_set_time_stamp_abs)(struct trace_buffer *buffer, bool abs);
static int (*rbpt_read_page_caught_up)(struct trace_buffer *buffer,
				       void **data_page, size_t len, int cpu,
				       int full);

static u64 rbpt_now;

static u64 rbpt_clock(void)
{
	return READ_ONCE(rbpt_now);
}

struct rbpt {
	struct seq_file		*m;
	struct trace_buffer	*buffer;
	void			*page;
	unsigned int		flags;
	int			cpu;
	u32			rand;
	u32			seq;
	/* what the copies held, over the whole run */
	unsigned int		reads, copies, swaps, consumed, nested, discarded;
	unsigned int		data, extends, stamps, padding, missed;
	unsigned int		write_fails;
	/* read with rbpt_read_page_caught_up() */
	bool			ask;
};

/* The irq_work's event: written from hard interrupt context. */
static struct rbpt *rbpt_irq_ctx;
static bool rbpt_irq_done;

static u32 rbpt_rand(struct rbpt *t)
{
	/* xorshift32: the same sequence on every kernel */
	t->rand ^= t->rand << 13;
	t->rand ^= t->rand >> 17;
	t->rand ^= t->rand << 5;
	return t->rand;
}

static void rbpt_tick(struct rbpt *t)
{
	u64 step = 1 + rbpt_rand(t) % 2000;

	if ((t->flags & RBPT_EXTENDS) && !(rbpt_rand(t) % 8))
		step += (1ULL << 27) + (rbpt_rand(t) % (1U << 30));
	WRITE_ONCE(rbpt_now, rbpt_now + step);
}

static unsigned long rbpt_event_len(struct rbpt *t)
{
	switch (rbpt_rand(t) % 8) {
	case 0:
		return 1 + rbpt_rand(t) % 4;
	case 1:
		return 100 + rbpt_rand(t) % 40;	/* around RB_MAX_SMALL_DATA */
	case 2:
		return 200 + rbpt_rand(t) % RBPT_MAX_EVENT;
	default:
		return 4 + rbpt_rand(t) % 96;
	}
}

static void rbpt_fill(struct rbpt *t, struct ring_buffer_event *event,
		      unsigned long len)
{
	unsigned char *p = ring_buffer_event_data(event);
	unsigned long i;

	t->seq++;
	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(t->seq * 31 + i);
}

static bool rbpt_write(struct rbpt *t)
{
	unsigned long len = rbpt_event_len(t);
	struct ring_buffer_event *event;

	rbpt_tick(t);
	event = ring_buffer_lock_reserve(t->buffer, len);
	if (!event) {
		t->write_fails++;
		return false;
	}
	rbpt_fill(t, event, len);
	ring_buffer_unlock_commit(t->buffer, event);
	return true;
}

static void rbpt_irq_fn(struct irq_work *work)
{
	rbpt_write(rbpt_irq_ctx);
	WRITE_ONCE(rbpt_irq_done, true);
}

static DEFINE_IRQ_WORK(rbpt_irq_work, rbpt_irq_fn);

/*
 * Reserve an event, write one from hard interrupt context while it is
 * reserved, then discard the first or commit it: a discarded event with one
 * after it cannot be taken back, and stays on the page as padding.
 */
static void rbpt_write_nested(struct rbpt *t)
{
	unsigned long len = rbpt_event_len(t);
	struct ring_buffer_event *event;
	bool discard = rbpt_rand(t) % 2;

	rbpt_tick(t);
	event = ring_buffer_lock_reserve(t->buffer, len);
	if (!event) {
		t->write_fails++;
		return;
	}
	rbpt_fill(t, event, len);
	rbpt_tick(t);
	rbpt_irq_ctx = t;
	WRITE_ONCE(rbpt_irq_done, false);
	/* preemption is off (the reservation): the work runs on this CPU */
	irq_work_queue(&rbpt_irq_work);
	while (!READ_ONCE(rbpt_irq_done))
		cpu_relax();
	t->nested++;
	if (discard) {
		ring_buffer_discard_commit(t->buffer, event);
		t->discarded++;
	} else {
		ring_buffer_unlock_commit(t->buffer, event);
	}
}

/* Count what a page read out holds, walking it as a trace_pipe_raw reader. */
static void rbpt_walk(struct rbpt *t, struct rbpt_page *page)
{
	unsigned long commit = local_read(&page->commit);
	unsigned long end = commit & RBPT_COMMIT_MASK;
	unsigned long pos = 0;

	if (commit & RBPT_MISSED_EVENTS)
		t->missed++;
	while (pos + sizeof(struct ring_buffer_event) <= end) {
		struct ring_buffer_event *event = (void *)(page->data + pos);
		unsigned long len;

		switch (event->type_len) {
		case RINGBUF_TYPE_PADDING:
			if (!event->time_delta)
				return;
			t->padding++;
			len = event->array[0] + 4;
			break;
		case RINGBUF_TYPE_TIME_EXTEND:
			t->extends++;
			len = 8;
			break;
		case RINGBUF_TYPE_TIME_STAMP:
			t->stamps++;
			len = 8;
			break;
		default:
			t->data++;
			len = event->type_len ? event->type_len * 4 + 4 :
				event->array[0] + 4;
			break;
		}
		pos += len;
	}
}

static void rbpt_counters(struct rbpt *t)
{
	seq_printf(t->m, " entries=%lu read=%lu bytes=%lu overrun=%lu\n",
		   ring_buffer_entries_cpu(t->buffer, t->cpu),
		   ring_buffer_read_events_cpu(t->buffer, t->cpu),
		   ring_buffer_bytes_cpu(t->buffer, t->cpu),
		   ring_buffer_overrun_cpu(t->buffer, t->cpu));
}

static int rbpt_read(struct rbpt *t, size_t len, int full)
{
	void *before = t->page;
	struct rbpt_page *page;
	bool caught_up;
	int ret;

	if (t->ask)
		ret = rbpt_read_page_caught_up(t->buffer, &t->page, len, t->cpu,
					       full);
	else
		ret = ring_buffer_read_page(t->buffer, &t->page, len, t->cpu,
					    full);
	seq_printf(t->m, "read len=%zu full=%d ret=%d", len, full, ret);
	if (ret < 0) {
		rbpt_counters(t);
		return ret;
	}
	page = t->page;
	caught_up = local_read(&page->commit) & RBPT_CAUGHT_UP;
	if (caught_up)
		local_sub(RBPT_CAUGHT_UP, &page->commit);
	t->reads++;
	if (page == before)
		t->copies++;
	else
		t->swaps++;
	rbpt_walk(t, page);
	seq_printf(t->m, " %s commit=%#lx ts=%llu crc=%08x",
		   page == before ? "copy" : "swap",
		   (unsigned long)local_read(&page->commit), page->time_stamp,
		   crc32_le(~0, (void *)page, PAGE_SIZE));
	seq_printf(t->m, " empty=%d%s",
		   ring_buffer_empty_cpu(t->buffer, t->cpu),
		   caught_up ? " caught-up" : "");
	rbpt_counters(t);
	return ret;
}

static void rbpt_consume(struct rbpt *t)
{
	struct ring_buffer_event *event;
	unsigned long lost = 0;
	u64 ts = 0;

	event = ring_buffer_consume(t->buffer, t->cpu, &ts, &lost);
	if (!event) {
		seq_puts(t->m, "consume none\n");
		return;
	}
	t->consumed++;
	seq_printf(t->m, "consume ts=%llu len=%u crc=%08x lost=%lu\n", ts,
		   ring_buffer_event_length(event),
		   crc32_le(~0, ring_buffer_event_data(event),
			    ring_buffer_event_length(event)),
		   lost);
}

static size_t rbpt_read_len(struct rbpt *t)
{
	switch (rbpt_rand(t) % 4) {
	case 0:
		return 20 + rbpt_rand(t) % 200;
	case 1:
		return 20 + rbpt_rand(t) % PAGE_SIZE;
	default:
		return PAGE_SIZE;
	}
}

static int rbpt_phase(struct rbpt *t, unsigned int phase)
{
	unsigned int flags = rbpt_phases[phase].flags;
	unsigned int round, i, n;

	t->flags = flags;
	t->buffer = ring_buffer_alloc(RBPT_PAGES * PAGE_SIZE,
				      flags & RBPT_OVERWRITE ? RB_FL_OVERWRITE : 0);
	if (!t->buffer)
		return -ENOMEM;
	rbpt_set_clock(t->buffer, rbpt_clock);
	if (flags & RBPT_ABS)
		rbpt_set_time_stamp_abs(t->buffer, true);
	t->page = ring_buffer_alloc_read_page(t->buffer, t->cpu);
	if (IS_ERR(t->page)) {
		ring_buffer_free(t->buffer);
		return PTR_ERR(t->page);
	}

	seq_printf(t->m, "phase %s\n", rbpt_phases[phase].name);
	for (round = 0; round < RBPT_ROUNDS; round++) {
		n = rbpt_rand(t) % 24;
		/* now and then more than the buffer holds */
		if ((flags & RBPT_OVERWRITE) && !(rbpt_rand(t) % 16))
			n += 200;
		for (i = 0; i < n; i++) {
			if (!(rbpt_rand(t) % 16))
				rbpt_write_nested(t);
			else
				rbpt_write(t);
		}
		if (!(rbpt_rand(t) % 8))
			rbpt_consume(t);
		n = 1 + rbpt_rand(t) % 2;
		for (i = 0; i < n; i++)
			rbpt_read(t, rbpt_read_len(t), !(rbpt_rand(t) % 4));
	}
	/* read it empty */
	for (i = 0; i < RBPT_DRAIN_MAX; i++)
		if (rbpt_read(t, PAGE_SIZE, 0) < 0)
			break;

	ring_buffer_free_read_page(t->buffer, t->cpu, t->page);
	ring_buffer_free(t->buffer);
	return 0;
}

static int rbpt_show(struct seq_file *m, void *v)
{
	struct rbpt *t;
	unsigned int phase;
	int ret = 0;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->m = m;
	t->ask = m->private;
	t->rand = 2463534242U;
	rbpt_now = 1000000;

	migrate_disable();
	t->cpu = raw_smp_processor_id();
	for (phase = 0; phase < ARRAY_SIZE(rbpt_phases) && !ret; phase++)
		ret = rbpt_phase(t, phase);
	migrate_enable();

	seq_printf(m, "summary reads=%u copies=%u swaps=%u consumed=%u nested=%u discarded=%u data=%u extends=%u stamps=%u padding=%u missed=%u write_fails=%u\n",
		   t->reads, t->copies, t->swaps, t->consumed, t->nested,
		   t->discarded, t->data, t->extends, t->stamps, t->padding,
		   t->missed, t->write_fails);
	kfree(t);
	return ret;
}

static int rbpt_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, rbpt_show, inode->i_private, 1 << 20);
}

static const struct file_operations rbpt_fops = {
	.owner		= THIS_MODULE,
	.open		= rbpt_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static unsigned long rbpt_lookup(const char *name)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	unsigned long (*lookup)(const char *name);

	if (register_kprobe(&kp))
		return 0;
	lookup = (void *)kp.addr;
	unregister_kprobe(&kp);
	return lookup(name);
}

static struct dentry *rbpt_file, *rbpt_caught_up_file;

static int __init rbpt_init(void)
{
	rbpt_set_clock = (void *)rbpt_lookup("ring_buffer_set_clock");
	rbpt_set_time_stamp_abs =
		(void *)rbpt_lookup("ring_buffer_set_time_stamp_abs");
	if (!rbpt_set_clock || !rbpt_set_time_stamp_abs) {
		pr_err("rb_read_page_testmod: ring_buffer_set_clock() or ring_buffer_set_time_stamp_abs() not found\n");
		return -ENOENT;
	}
	rbpt_read_page_caught_up =
		(void *)rbpt_lookup("ring_buffer_read_page_caught_up");
	rbpt_file = debugfs_create_file("rb_read_page_testmod", 0400, NULL,
					NULL, &rbpt_fops);
	/* any non-NULL private data: read with the flag asked for */
	if (rbpt_read_page_caught_up)
		rbpt_caught_up_file =
			debugfs_create_file("rb_read_page_testmod_caught_up",
					    0400, NULL, (void *)1, &rbpt_fops);
	return 0;
}

static void __exit rbpt_exit(void)
{
	debugfs_remove(rbpt_caught_up_file);
	debugfs_remove(rbpt_file);
	irq_work_sync(&rbpt_irq_work);
}

module_init(rbpt_init);
module_exit(rbpt_exit);
MODULE_DESCRIPTION("ring_buffer_read_page() on a ring buffer of known content, to compare kernels");
MODULE_LICENSE("GPL");
