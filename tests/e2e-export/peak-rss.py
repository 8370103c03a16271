#!/usr/bin/env python3
"""peak-rss.py OUT CMD...: run CMD with stdout to OUT (stderr to OUT.err) and print
the peak resident set size of that one child in KiB (the kernel's high-water mark,
VmHWM, as getrusage() reports it once the child has been waited for), or fail with
its exit status."""
import resource
import subprocess
import sys

with open(sys.argv[1], 'wb') as out, open(sys.argv[1] + '.err', 'wb') as err:
    r = subprocess.run(sys.argv[2:], stdout=out, stderr=err)
if r.returncode != 0:
    sys.exit('%s: exit status %d' % (sys.argv[2], r.returncode))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
