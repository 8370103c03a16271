#!/usr/bin/env python3
"""mkmapbin.py DB BOOT EPOCH OUT: write the stacks host-agent stored for one map
epoch of a boot as the seed's stack_map_bin v1 file (what `cat stack_map_bin` in
the guest gives: 16-byte header 'FSMB', version 1, count; per stack a 16-byte
header id, depth, ref_count, then the IPs; little-endian)."""
import sqlite3
import struct
import sys

db, boot, epoch, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = sqlite3.connect(db).execute(
    'SELECT stack_id, nr, COALESCE(ref_count, 0), ips FROM stacks WHERE boot = ? AND epoch = ?'
    ' ORDER BY stack_id', (boot, epoch)).fetchall()
with open(out, 'wb') as f:
    f.write(struct.pack('<IIII', 0x46534D42, 1, len(rows), 0))
    for sid, nr, ref, ips in rows:
        f.write(struct.pack('<IIII', sid, len(ips) // 8, ref, 0) + ips)
print('mkmapbin: %d stacks of epoch %d' % (len(rows), epoch))
