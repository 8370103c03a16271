// SPDX-License-Identifier: MIT
/* A stand-in for vmlinux in test-resolve: a function with an inlined callee. */
static inline __attribute__((always_inline)) int fixture_leaf(int x)
{
	return x * 3 + 1;	/* FIXTURE_LEAF_LINE */
}

__attribute__((noinline)) int fixture_outer(int x);
__attribute__((noinline)) int fixture_outer(int x)
{
	return fixture_leaf(x) ^ 0x55;	/* FIXTURE_CALL_LINE */
}

int main(int argc, char **argv)
{
	(void)argv;
	return fixture_outer(argc);
}
