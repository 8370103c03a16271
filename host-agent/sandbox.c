// SPDX-License-Identifier: MIT
/*
 * sandbox.c - a confined child process for risky computations (see sandbox.h).
 */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SETUP_FAILED	126	/* the child's exit status when it could not confine itself */
#define SHARED_MAX	256u	/* shared mappings a child can unmap */
#define FILTER_MAX	1024	/* BPF instructions of the filter */
#ifdef HA_SANDBOX_UNCONFINED
#define CONFINED	false	/* sandbox.h */
#else
#define CONFINED	true
#endif

static gint nr_runs;

unsigned int ha_sandbox_runs(void)
{
	return (unsigned int)g_atomic_int_get(&nr_runs);
}

/* Unmap every shared mapping of this process, as /proc/self/maps lists them. */
static bool unmap_shared(void)
{
	struct { uintptr_t start, end; } r[SHARED_MAX];
	unsigned int nr = 0;
	char buf[4096], line[256];
	size_t ll = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			uintptr_t s, e;
			char perms[5];

			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];	/* the start of a line is enough */
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &s, &e, perms) != 3 ||
			    strlen(perms) != 4)
				goto fail;
			if (perms[3] != 's')
				continue;
			if (nr == SHARED_MAX)
				goto fail;
			r[nr].start = s;
			r[nr++].end = e;
		}
	}
	if (n < 0)
		goto fail;
	close(fd);
	for (unsigned int i = 0; i < nr; i++)
		if (munmap((void *)r[i].start, r[i].end - r[i].start) != 0)
			return false;
	return true;
fail:
	close(fd);
	return false;
}

/*
 * The filter: anonymous private memory management and exit, nothing else (sandbox.h).
 * Built once by libseccomp in the parent and exported as a BPF program, so that a
 * child only has to install it (no allocation, no libseccomp between fork and @fn).
 */
static struct sock_fprog filter;

static gpointer build_filter(gpointer unused)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	struct sock_filter *prog = NULL;
	int fds[2] = { -1, -1 };
	ssize_t n = -1;
	bool ok;

	(void)unused;
	if (!ctx)
		return NULL;
	ok = !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(brk), 0) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 2,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
			       SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED | MAP_ANONYMOUS,
				       MAP_ANONYMOUS)) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
			       SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mremap), 0) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(munmap), 0) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(madvise), 0) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigreturn), 0) &&
	     /* the sanitizers' exit path asks for its signal stack */
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sigaltstack), 0) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit), 0) &&
	     !seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(exit_group), 0) &&
	     pipe2(fds, O_CLOEXEC) == 0 && !seccomp_export_bpf(ctx, fds[1]);
	seccomp_release(ctx);
	if (fds[1] >= 0)
		close(fds[1]);
	if (ok) {
		/* a few dozen instructions: far below a pipe's buffer */
		prog = g_malloc(FILTER_MAX * sizeof(*prog));
		n = read(fds[0], prog, FILTER_MAX * sizeof(*prog));
	}
	if (fds[0] >= 0)
		close(fds[0]);
	if (n <= 0 || n % (ssize_t)sizeof(*prog) || n == FILTER_MAX * (ssize_t)sizeof(*prog)) {
		g_free(prog);
		return NULL;
	}
	filter.len = (unsigned short)(n / (ssize_t)sizeof(*prog));
	filter.filter = prog;
	return &filter;
}

static bool confine(const struct sock_fprog *prog)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
				     SIGSYS, SIGXCPU };
	const struct rlimit core = { 0, 0 };
	const struct rlimit cpu = { HA_SANDBOX_CPU_SECONDS, HA_SANDBOX_CPU_SECONDS + 1 };

	for (unsigned int i = 0; i < G_N_ELEMENTS(fatal); i++)
		signal(fatal[i], SIG_DFL);
	if (setrlimit(RLIMIT_CORE, &core) != 0 || prctl(PR_SET_DUMPABLE, 0) != 0 ||
	    setrlimit(RLIMIT_CPU, &cpu) != 0)
		return false;
	if (!CONFINED)
		return true;
	return unmap_shared() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog) == 0;
}

bool ha_sandbox_run(HaSandboxFn fn, void *arg, int *ret_code, GError **error)
{
	int status, sig;
	pid_t pid;

	static GOnce once = G_ONCE_INIT;
	const struct sock_fprog *prog = CONFINED ? g_once(&once, build_filter, NULL) : &filter;

	if (!prog) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "no seccomp filter for the sandbox (libseccomp failed)");
		return false;
	}
	g_atomic_int_inc(&nr_runs);
	fflush(NULL);	/* a child must not inherit buffered output it could write twice */
	pid = fork();
	if (pid < 0) {
		int err = errno;

		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "fork: %s", g_strerror(err));
		return false;
	}
	if (pid == 0) {
		if (!confine(prog))
			_exit(SETUP_FAILED);
		_exit(fn(arg) & 0x7f);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "waitpid: %s",
				    g_strerror(errno));
			return false;
		}
	}
	if (WIFEXITED(status)) {
		if (WEXITSTATUS(status) == SETUP_FAILED) {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "the sandbox process could not confine itself (seccomp)");
			return false;
		}
		*ret_code = WEXITSTATUS(status);
		return true;
	}
	sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	if (sig == SIGSYS)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "it made a forbidden system call (SIGSYS)");
	else if (sig == SIGXCPU || sig == SIGKILL)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "it ran out of its %u s of CPU time (signal %d)",
			    HA_SANDBOX_CPU_SECONDS, sig);
	else
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
			    "it crashed (signal %d, %s)", sig, g_strsignal(sig));
	return false;
}
