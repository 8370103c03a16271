// SPDX-License-Identifier: GPL-2.0
/*
 * stackmap_testmod: allocations from a loadable module, for the stackmap's
 * end-to-end tests.
 *
 * Writing N to /sys/kernel/debug/stackmap_testmod makes N kmalloc() calls,
 * each from stackmap_testmod_inner() through stackmap_testmod_outer(), and
 * frees them again. Reading the file gives the number of allocations made
 * since the module was loaded. With kmem:kmalloc traced with stacks, every one
 * of those events must carry a stack whose module frames resolve to this
 * module's symbols, also after the module is unloaded.
 *
 * Writing a context to /sys/kernel/debug/stackmap_testmod_crash kills the
 * kernel from it, for the post-mortem tests (host-agent recovers the oops from
 * the guest's memory and compares it with the console's):
 *   null   a NULL pointer write in process context (the write() itself): an
 *          oops, then "Fatal exception" (PANIC_ON_OOPS)
 *   timer  the same from a timer callback: an oops in softirq context, then
 *          "Fatal exception in interrupt"
 *   panic  panic() in process context
 *   lockup a soft lockup: the write() spins with preemption off until the
 *          watchdog panics (boot with softlockup_panic=1; watchdog_thresh=1
 *          makes it take about 2 s); gives up after 60 s with -ETIMEDOUT
 */
#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/atomic.h>
#include <linux/uaccess.h>
#include <linux/timer.h>
#include <linux/string.h>
#include <linux/jiffies.h>
#include <linux/preempt.h>

#define TESTMOD_MAX_ROUND	1000

static struct dentry *testmod_file, *testmod_crash_file;
static struct timer_list testmod_timer;
static atomic_long_t testmod_allocations = ATOMIC_LONG_INIT(0);

static noinline void *stackmap_testmod_inner(size_t size)
{
	void *p = kmalloc(size, GFP_KERNEL);

	/* Not a tail call: this function's frame stays in the recorded stack. */
	barrier();
	return p;
}

static noinline int stackmap_testmod_outer(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		void *p = stackmap_testmod_inner(64);

		if (!p)
			return -ENOMEM;
		atomic_long_inc(&testmod_allocations);
		kfree(p);
	}
	return 0;
}

static ssize_t testmod_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	unsigned int n;
	int ret;

	ret = kstrtouint_from_user(ubuf, count, 0, &n);
	if (ret)
		return ret;
	if (n > TESTMOD_MAX_ROUND)
		return -EINVAL;
	ret = stackmap_testmod_outer(n);
	return ret ? ret : count;
}

static ssize_t testmod_read(struct file *file, char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	char buf[24];
	int len;

	len = scnprintf(buf, sizeof(buf), "%ld\n",
			atomic_long_read(&testmod_allocations));
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

static const struct file_operations testmod_fops = {
	.owner	= THIS_MODULE,
	.read	= testmod_read,
	.write	= testmod_write,
	.llseek	= default_llseek,
};

/* The NULL write both crash contexts make; noinline: its own backtrace frame. */
static noinline void stackmap_testmod_oops(void)
{
	int *volatile p = NULL;

	*p = 1;
}

static void stackmap_testmod_timer_fn(struct timer_list *t)
{
	stackmap_testmod_oops();
}

static ssize_t testmod_crash_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	char buf[16];
	size_t n = min(count, sizeof(buf) - 1);

	if (copy_from_user(buf, ubuf, n))
		return -EFAULT;
	buf[n] = '\0';
	strim(buf);
	if (!strcmp(buf, "null")) {
		stackmap_testmod_oops();
	} else if (!strcmp(buf, "timer")) {
		mod_timer(&testmod_timer, jiffies + 1);
	} else if (!strcmp(buf, "panic")) {
		panic("stackmap_testmod: panic on request");
	} else if (!strcmp(buf, "lockup")) {
		unsigned long end = jiffies + 60 * HZ;

		preempt_disable();
		while (time_before(jiffies, end))
			cpu_relax();
		preempt_enable();
		return -ETIMEDOUT;
	} else {
		return -EINVAL;
	}
	return count;
}

static const struct file_operations testmod_crash_fops = {
	.owner	= THIS_MODULE,
	.write	= testmod_crash_write,
	.llseek	= default_llseek,
};

static int __init stackmap_testmod_init(void)
{
	timer_setup(&testmod_timer, stackmap_testmod_timer_fn, 0);
	testmod_file = debugfs_create_file("stackmap_testmod", 0600, NULL, NULL,
					   &testmod_fops);
	testmod_crash_file = debugfs_create_file("stackmap_testmod_crash", 0200, NULL,
						 NULL, &testmod_crash_fops);
	return 0;
}

static void __exit stackmap_testmod_exit(void)
{
	debugfs_remove(testmod_crash_file);
	debugfs_remove(testmod_file);
	del_timer_sync(&testmod_timer);
}

module_init(stackmap_testmod_init);
module_exit(stackmap_testmod_exit);
MODULE_DESCRIPTION("Allocations from a module, for the ftrace stackmap's tests");
MODULE_LICENSE("GPL");
