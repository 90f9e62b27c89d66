#!/usr/bin/env bash
# NVIDIA's streaming-tail study (docs/cuqr.md, "Streaming tail"): distances x rounds into
# streaming-tail-out/streaming-tail.{csv,png,svg}. Options: scripts/streaming-tail-study.sh --help.
#   cargo build --release -p backline
#   scripts/streaming-tail-study.sh --distances 3,5,7 --rounds 10,100,1000 --shots 1000 -- --pin 0,1
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv-py/bin/python}
[ -x "$py" ] || py=python3
"$py" -c 'import stim' 2>/dev/null || {
    echo "streaming-tail-study: error: $py has no stim (pip install stim==1.16.0)" >&2
    exit 2
}
exec "$py" "$root/scripts/streaming-tail-study.py" --backline "${BACKLINE:-$root/target/release/backline}" "$@"
