/* SPDX-License-Identifier: MIT */
/*
 * sandbox.h - run a risky computation once in a confined child process first.
 *
 * Some library code the host runs on guest bytes is known to crash on crafted input
 * (libtraceevent 1.7's format parser dereferences NULL on some print fmt texts) and
 * cannot be fixed here. ha_sandbox_run() forks: the child is an exact copy of the
 * caller's memory, confines itself, calls @fn and exits with what it returned; the
 * caller waits for it and learns whether @fn returned at all, and what. When @fn does
 * exactly what the caller is about to do on that same state, a crash or a hang happens
 * in the child, and the caller can refuse the input instead of dying on it. Whatever
 * the child computed or allocated ends with it.
 *
 * The child's confinement, before @fn runs:
 *  - fatal signals back to their default action, no core dump (RLIMIT_CORE 0, not
 *    dumpable), HA_SANDBOX_CPU_SECONDS of CPU time (then SIGXCPU, SIGKILL);
 *  - every shared mapping it inherited unmapped (the store's WAL index is one): what
 *    it writes in memory reaches no other process;
 *  - a seccomp filter that kills it on any system call but anonymous private memory
 *    management (brk, mmap, mremap, munmap, madvise; never PROT_EXEC) and exit: it
 *    can read, write or close no file descriptor (the store's, the guest's socket).
 * So @fn must be a pure computation: no I/O, no threads, no locks another thread may
 * have held at the fork (glibc's malloc is safe: fork takes its locks).
 *
 * Built with HA_SANDBOX_UNCONFINED (only the test binaries run under valgrind, whose
 * own core needs system calls and shared mappings in the child), the child keeps the
 * signal, core and CPU limits but neither unmaps nor filters anything: crashes still
 * stay in the child, but nothing stops a compromised one.
 */
#ifndef HA_SANDBOX_H
#define HA_SANDBOX_H

#include <glib.h>
#include <stdbool.h>

#define HA_SANDBOX_CPU_SECONDS	2u

/* What the child runs: returns 0 .. 125, its exit status. */
typedef int (*HaSandboxFn)(void *arg);

/*
 * Run @fn(@arg) in a confined child and wait for it. True with *ret_code when it
 * exited normally. False with @error: G_IO_ERROR_INVALID_DATA when the child was
 * killed (a crash, a forbidden system call, its CPU time: the input's fault, the
 * message says which), G_IO_ERROR_FAILED when no child could run or confine itself
 * (the host's fault: fork failed, no seccomp).
 */
bool ha_sandbox_run(HaSandboxFn fn, void *arg, int *ret_code, GError **error);

/* Children run so far by this process (tests: what a cache saved). */
unsigned int ha_sandbox_runs(void);

#endif /* HA_SANDBOX_H */
