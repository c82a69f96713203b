#!/usr/bin/env bash
# Create or refresh the repository's Python environment (.venv/) from trainer/requirements-test.txt.
# Idempotent: does nothing when .venv exists and was built from the same requirements (hash stamp in .venv).
# Set PYTHON to choose the interpreter (default: python3.11, else python3).
set -euo pipefail

sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/trainer/requirements-test.txt"
STAMP="$VENV/.requirements.sha256"

if [[ -n "${PYTHON:-}" ]]; then
  PY="$PYTHON"
elif command -v python3.11 >/dev/null 2>&1; then
  PY=python3.11
else
  PY=python3
fi
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "python-env: $PY not found; install Python 3.11 or set PYTHON" >&2
  exit 1
fi
[[ -f "$REQ" ]] || { echo "python-env: missing $REQ" >&2; exit 1; }

PY_VERSION="$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
WANT="$( { cat "$REQ"; echo "python $PY_VERSION"; } | sha256 | cut -d' ' -f1)"

# One run at a time (two test runs may start together).
mkdir -p "$ROOT/build"
exec 9>"$ROOT/build/.python-env.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "python env up to date: $VENV (Python $PY_VERSION)"
  exit 0
fi

START=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
LOG="$VENV/pip-install.log"
if ! "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -r "$REQ" >"$LOG" 2>&1; then
  echo "python-env: pip install -r trainer/requirements-test.txt failed; last lines of $LOG:" >&2
  tail -n 20 "$LOG" >&2
  exit 1
fi
TORCH="$("$VENV/bin/python" -c 'import torch; print(torch.__version__)')"
echo "$WANT" >"$STAMP"
echo "python env ready: $VENV (Python $PY_VERSION, torch $TORCH) in $(($(date +%s) - START))s"
