// SPDX-License-Identifier: MIT
/* fuzz-format-seeds DIR: seed inputs for fuzz-format (the 6.1 texts of guest-formats.c). */
#include <stdio.h>
#include <string.h>

#include "guest-formats.h"

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	for (unsigned int i = 2; i < gf_nr_formats; i++) {
		const char *t = gf_formats[i].text;
		const char *body = strstr(t, "format:\n");
		char path[4096];
		FILE *f;

		for (int mode = 0; mode < 2; mode++) {
			const char *x = mode ? body + 8 : t;

			snprintf(path, sizeof(path), "%s/seed-%u-%d", argv[1], i, mode);
			f = fopen(path, "wb");
			if (!f)
				return 1;
			fputc(mode, f);
			fputc(0, f);
			fputc(0, f);
			fwrite(x, 1, strlen(x), f);
			if (fclose(f) != 0)
				return 1;
		}
	}
	return 0;
}
