#!/usr/bin/env bash
# Quick start: translate the bundled sample sentences with the embedded policy and the bundled demo
# glossary, showing each step. Point it at a model with GLOSSA_MODEL_PATH=/path/to/onnx-model-folder,
# or at a server with GLOSSA_ENDPOINT=http://host:port/v1 (and GLOSSA_MODEL=name).
set -euo pipefail
cd "$(dirname "$0")/.."
export npm_config_nodedir="${npm_config_nodedir:-/usr}"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
if [ ! -f dist/cli.js ] || [ -n "$(find extension protocol -newer dist/cli.js -print -quit)" ]; then
  node scripts/build.mjs --only cli >/dev/null
fi
exec node dist/cli.js translate --samples --steps "$@"
