#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
Compare proto's stack_map_bin v1 parser with the seed's own tool.

The seed's tools/tracing/stackmap_dump.py is taken from our kernel patch series (where
patch 3 of the seed adds it). Fixtures are written here in the seed's layout, in both
byte orders, with depths 1..64, ref counts up to INT_MAX and the trampoline marker; each
is parsed by both tools and the output must be identical. Truncated fixtures (inside the
header, an entry header, an IP array) must be refused by both.

Usage: test-bin-seed.py BIN_DUMP PATCH_DIR   (TAP output)
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

MAGIC = 0x46534D42
TRAMPOLINE = 0x7FFFFFFF


def extract_tool(patch_dir, out):
    """Rebuild tools/tracing/stackmap_dump.py from the new-file hunk of its patch."""
    target = '+++ b/tools/tracing/stackmap_dump.py'
    for name in sorted(os.listdir(patch_dir)):
        if not name.endswith('.patch'):
            continue
        with open(os.path.join(patch_dir, name), encoding='utf-8') as f:
            lines = f.read().split('\n')
        if target not in lines:
            continue
        i = lines.index(target) + 1
        if not lines[i].startswith('@@ -0,0 +1,'):
            raise SystemExit(f'{name}: stackmap_dump.py hunk is not a new file')
        count = int(lines[i].split('+1,')[1].split(' ')[0])
        body = [l[1:] for l in lines[i + 1:i + 1 + count]]
        if any(not l.startswith('+') for l in lines[i + 1:i + 1 + count]):
            raise SystemExit(f'{name}: malformed stackmap_dump.py hunk')
        with open(out, 'w', encoding='utf-8') as f:
            f.write('\n'.join(body) + '\n')
        return name
    raise SystemExit(f'no patch in {patch_dir} adds tools/tracing/stackmap_dump.py')


def fixture(rng, endian, nr_stacks):
    e = '<' if endian == 'le' else '>'
    out = [struct.pack(f'{e}IIII', MAGIC, 1, nr_stacks, 0)]
    for s in range(nr_stacks):
        depth = rng.choice([1, 2, 5, 17, 63, 64])
        ips = [rng.randrange(0xffffffff81000000, 0xffffffff82000000) for _ in range(depth)]
        if s % 3 == 1:
            ips[rng.randrange(depth)] = TRAMPOLINE
        ref = rng.choice([1, 7, 12345, 0x7fffffff])
        sid = (rng.randrange(2048) << 20) | rng.randrange(1 << 19)
        out.append(struct.pack(f'{e}IIII', sid, depth, ref, 0))
        out.append(struct.pack(f'{e}{depth}Q', *ips))
    return b''.join(out)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout, p.stderr


def main():
    bin_dump, patch_dir = sys.argv[1], sys.argv[2]
    n = failed = 0

    def ok(cond, msg):
        nonlocal n, failed
        n += 1
        failed += not cond
        print(f"{'ok' if cond else 'not ok'} {n} - {msg}", flush=True)

    rng = random.Random(20261130)
    with tempfile.TemporaryDirectory() as tmp:
        tool = os.path.join(tmp, 'stackmap_dump.py')
        src = extract_tool(patch_dir, tool)
        print(f'# seed tool from {src}')
        for endian in ('le', 'be'):
            for nr in (0, 1, 40):
                path = os.path.join(tmp, f'{endian}-{nr}.bin')
                data = fixture(rng, endian, nr)
                with open(path, 'wb') as f:
                    f.write(data + (b'\xaa' * 5 if nr == 1 else b''))
                rs, seed_out, seed_err = run([sys.executable, tool, path])
                rc, ours, our_err = run([bin_dump, path])
                ok(rs == 0 and rc == 0 and seed_out == ours and seed_err == our_err,
                   f'{endian}, {nr} stacks: output identical to the seed tool '
                   f'({len(ours)} bytes)')
                if rs or rc or seed_out != ours:
                    print(f'# seed rc={rs} err={seed_err!r}\n# ours rc={rc} err={our_err!r}')

            data = fixture(rng, endian, 6)
            cuts = sorted(set([0, 3, 15, 16, 17, 31, 32, 40, len(data) - 8, len(data) - 1] +
                              [rng.randrange(len(data)) for _ in range(30)]))
            agree = True
            for cut in cuts:
                path = os.path.join(tmp, f'cut-{endian}-{cut}.bin')
                with open(path, 'wb') as f:
                    f.write(data[:cut])
                rs, _, _ = run([sys.executable, tool, path])
                rc, _, _ = run([bin_dump, path])
                if rs == 0 or rc == 0:
                    agree = False
                    print(f'# cut at {cut}: seed rc={rs}, ours rc={rc}')
            ok(agree, f'{endian}: {len(cuts)} truncated files refused by both tools')

        path = os.path.join(tmp, 'v2.bin')
        with open(path, 'wb') as f:
            f.write(struct.pack('<IIII', MAGIC, 2, 0, 0))
        rs, _, _ = run([sys.executable, tool, path])
        rc, _, _ = run([bin_dump, path])
        ok(rs != 0 and rc != 0, 'version 2 refused by both tools')

    print(f'1..{n}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
