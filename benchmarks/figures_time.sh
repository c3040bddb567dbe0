#!/usr/bin/env bash
# Cold `make figures` (figure files removed) and the no-op rerun, timed. Target: cold <= 60 s on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf notebooks/executed figures/*.png figures/*.pdf  # figure files are the targets
t0=$(date +%s.%N); make -s figures >/dev/null 2>&1; t1=$(date +%s.%N)
make -s figures >/dev/null 2>&1; t2=$(date +%s.%N)
python3 -c "import sys; c, w = float(sys.argv[2]) - float(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2]); print(f'cold make figures: {c:.1f} s (target <= 60 s)'); print(f'no-op rerun      : {w:.2f} s')" "$t0" "$t1" "$t2"
