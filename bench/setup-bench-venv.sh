#!/usr/bin/env bash
# Creates the retrieval benchmark's own Python environment in .cache/bench-venv.
# numpy is pinned to 1.26: bm25s's fast top-k selection is far slower with numpy 2.x, and the
# comparison must be against bm25s at its best. numba is optional (bm25s's fastest backend).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.cache/bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet "numpy==1.26.*" "scipy<1.14" bm25s
if ! "$venv/bin/pip" install --quiet numba; then
  echo "numba did not install; bm25s will use its numpy backend" >&2
fi
"$venv/bin/python" - <<'PY'
import bm25s, numpy
try:
    import numba
    backend = f"numba {numba.__version__}"
except ImportError:
    backend = "numpy only"
print(f"bench venv ready: bm25s {bm25s.__version__}, numpy {numpy.__version__}, {backend}")
PY
