// SPDX-License-Identifier: MIT
/*
 * tcg-insns.c - a QEMU TCG plugin that counts the guest instructions executed between
 * two marks, per translation block: where a guest's time goes, by the guest's own
 * work, whatever the host's load (agent-cost --tcg-insns).
 *
 *   qemu-system-x86_64 -accel tcg ... -plugin tcg-insns.so,fifo=CTL,out=DIR
 *
 * Lines written to the FIFO CTL: "B NAME" takes a snapshot of every count, "E NAME"
 * writes DIR/NAME.insns: one line "VADDR COUNT" (hex address of a block's first
 * instruction, decimal instructions executed from blocks starting there since the "B
 * NAME"). NAME is [A-Za-z0-9_.-]+. Single-threaded TCG only (one thread executes
 * every vCPU, so the counters need no atomics against each other; the mark thread
 * reads them while they run, which skews a count by the few blocks in between).
 *
 * QEMU 7.2 ships no qemu-plugin.h in Debian: the few calls used are declared here
 * from its plugin API version 1 (docs/devel/tcg-plugins.rst), which 7.2 accepts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op, void *ptr,
					      uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define EXPORT __attribute__((visibility("default")))

EXPORT extern int qemu_plugin_version;
EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc,
			       char **argv);

int qemu_plugin_version = 1;

/* One translated block: retranslations of one address get blocks of their own. */
struct block {
	uint64_t vaddr;
	uint64_t insns;		/* added to by the block's inline op */
	uint64_t snap;		/* insns at the last "B" */
};

/* Blocks in chunks that never move (their counters are the inline ops' targets). */
#define CHUNK 65536
static struct block **chunks;
static size_t nchunks, nblocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *fifo, *outdir;

static struct block *new_block(void)
{
	struct block *b = NULL;

	pthread_mutex_lock(&lock);
	if (nblocks == nchunks * CHUNK) {
		struct block **c = realloc(chunks, (nchunks + 1) * sizeof(*c));

		if (c) {
			chunks = c;
			chunks[nchunks] = calloc(CHUNK, sizeof(struct block));
			if (chunks[nchunks])
				nchunks++;
		}
	}
	if (nblocks < nchunks * CHUNK) {
		b = &chunks[nblocks / CHUNK][nblocks % CHUNK];
		nblocks++;
	}
	pthread_mutex_unlock(&lock);
	return b;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = new_block();

	(void)id;
	if (!b)
		return;		/* out of memory: that block goes uncounted */
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->insns,
						 qemu_plugin_tb_n_insns(tb));
}

static bool name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return false;
	return true;
}

static void mark(char what, const char *name)
{
	char path[4096];
	FILE *f = NULL;

	if (what == 'E') {
		snprintf(path, sizeof(path), "%s/%s.insns", outdir, name);
		f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "tcg-insns: %s: %s\n", path, strerror(errno));
			return;
		}
	}
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nblocks; i++) {
		struct block *b = &chunks[i / CHUNK][i % CHUNK];
		uint64_t now = __atomic_load_n(&b->insns, __ATOMIC_RELAXED);

		if (what == 'B')
			b->snap = now;
		else if (now != b->snap)
			fprintf(f, "%llx %llu\n", (unsigned long long)b->vaddr,
				(unsigned long long)(now - b->snap));
	}
	pthread_mutex_unlock(&lock);
	if (f && fclose(f))
		fprintf(stderr, "tcg-insns: %s: %s\n", path, strerror(errno));
}

static void *mark_thread(void *arg)
{
	char line[256], name[200];

	(void)arg;
	for (;;) {
		FILE *f = fopen(fifo, "r");	/* waits for a writer */

		if (!f) {
			fprintf(stderr, "tcg-insns: %s: %s\n", fifo, strerror(errno));
			return NULL;
		}
		while (fgets(line, sizeof(line), f)) {
			char what;

			if (sscanf(line, "%c %199s", &what, name) == 2 &&
			    (what == 'B' || what == 'E') && name_ok(name))
				mark(what, name);
			else
				fprintf(stderr, "tcg-insns: bad mark line ignored\n");
		}
		fclose(f);
	}
	return NULL;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc,
			       char **argv)
{
	pthread_t t;

	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "fifo=", 5))
			fifo = argv[i] + 5;
		else if (!strncmp(argv[i], "out=", 4))
			outdir = argv[i] + 4;
	}
	if (!fifo || !outdir) {
		fprintf(stderr, "tcg-insns: needs fifo=PATH,out=DIR\n");
		return -1;
	}
	fifo = strdup(fifo);
	outdir = strdup(outdir);
	if (!fifo || !outdir || pthread_create(&t, NULL, mark_thread, NULL))
		return -1;
	pthread_detach(t);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
