#!/usr/bin/env bash
# Builds the production bundles and packs glossa-linux-x64.vsix (native binaries for linux-x64 only).
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/build.mjs --production
npm_config_yes=true npx --yes @vscode/vsce@3.9.2 package --target linux-x64 --allow-missing-repository -o glossa-linux-x64.vsix
ls -l glossa-linux-x64.vsix
