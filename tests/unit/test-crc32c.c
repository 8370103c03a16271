// SPDX-License-Identifier: MIT
/* CRC32C: known vectors, hardware == table, continuation. */
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "tap.h"

int main(void)
{
	static uint8_t buf[4096 + 16];
	uint32_t x = 12345;

	is_int(smp_crc32c(0, "123456789", 9), 0xE3069283u, "check value of crc32c(\"123456789\")");
	is_int(smp_crc32c_sw(0, "123456789", 9), 0xE3069283u, "table check value");
	is_int(smp_crc32c(0, "", 0), 0, "empty input");
	memset(buf, 0, 32);
	is_int(smp_crc32c(0, buf, 32), 0x8A9136AAu, "32 zero bytes (RFC 3720 B.4)");
	memset(buf, 0xff, 32);
	is_int(smp_crc32c(0, buf, 32), 0x62A8AB43u, "32 0xff bytes (RFC 3720 B.4)");

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	int agree = 1, cont = 1;
	for (size_t off = 0; off < 16; off++) {
		for (size_t len = 0; len < 300; len += 7) {
			uint32_t a = smp_crc32c(0, buf + off, len);
			uint32_t b = smp_crc32c_sw(0, buf + off, len);
			size_t cut = len / 3;
			uint32_t c = smp_crc32c(smp_crc32c(0, buf + off, cut), buf + off + cut,
						len - cut);

			agree &= a == b;
			cont &= a == c;
		}
	}
	ok(agree, "hardware (%s) and table implementations agree at every alignment",
	   smp_crc32c_hw() ? "sse4.2" : "none");
	ok(cont, "a CRC continues across split buffers");
	is_int(smp_crc32c(0, buf, 4096), smp_crc32c_sw(0, buf, 4096), "4 KiB page");
	return tap_done();
}
