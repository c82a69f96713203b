#!/usr/bin/env bash
# The whole test suite: install, lint, type-check, build, unit tests (TypeScript and Python),
# packaging, and the end-to-end test in a real VS Code. Safe to re-run; each step is idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
export npm_config_nodedir="${npm_config_nodedir:-/usr}"
E2E_DIR="${GLOSSA_E2E_DIR:-$HOME/.cache/glossa-e2e}"
SHARED="$(cd .. && pwd)/shared"

step() { printf '\n== %s\n' "$*"; }

step "npm dependencies"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

step "lint and format (biome)"
npx biome check .

step "type-check (tsc, strict)"
npx tsc -p tsconfig.json

step "bundle (esbuild)"
node scripts/build.mjs

step "python environment and tiny test models"
bash scripts/build-tiny-models.sh

step "python lint"
.venv/bin/ruff check trainer test/fixtures/models bench
.venv/bin/ruff format --check trainer test/fixtures/models bench

step "python tests (trainer: the protocol replayed from protocol/golden)"
(cd trainer && ../.venv/bin/python -m pytest tests -q)

step "real VS Code for end-to-end tests (code-server, chromium, playwright-core)"
bash "$SHARED/tools/vscode-e2e-setup.sh" "$E2E_DIR" >/tmp/glossa-e2e-setup.log 2>&1 || { tail -40 /tmp/glossa-e2e-setup.log; exit 1; }
# shellcheck disable=SC1091
source "$E2E_DIR/env.sh"

step "unit and integration tests (mocha)"
npx mocha --reporter spec 2>&1 | tee /tmp/glossa-mocha.log
mocha_passed=$(grep -Eo '^ +[0-9]+ passing' /tmp/glossa-mocha.log | grep -Eo '[0-9]+' || echo 0)
mocha_failed=$(grep -Eo '^ +[0-9]+ failing' /tmp/glossa-mocha.log | grep -Eo '[0-9]+' || echo 0)

step "package the extension (.vsix for linux-x64)"
bash scripts/package.sh

step "desktop VS Code (@vscode/test-electron), where it can be downloaded"
node dist/electron-run.js

step "end-to-end in a real VS Code"
node dist/e2e.js
e2e_passed=1

echo
echo "tests: $((mocha_passed + e2e_passed)) passed, ${mocha_failed} failed"
[ "$mocha_failed" = 0 ]
