#!/bin/sh
# fuzz-cmdlines-seeds.sh DIR: seed texts for fuzz-cmdlines, saved_cmdlines as the
# kernel prints it, and as a hostile guest might not.
set -eu
d=$1
printf '1 init\n42 bash\n7 kworker/0:1\n' >"$d/plain"
printf '1 init\n\000001 renamed\n2 x' >"$d/two-texts"
printf '9 0123456789abcde\n9 0123456789abcdef\n0 zero\n4194304 max\n4194305 over\n' >"$d/bounds"
printf '5 \033[31mred\n6 \001\377\n7  \n-1 neg\n' >"$d/bytes"
