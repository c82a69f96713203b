#!/usr/bin/env bash
# Build the tiny test models into build/tiny-models/ (see test/fixtures/models/build_tiny_models.py).
# Idempotent: skipped when the stamp (hash of builder, fixture and Python requirements) matches and the outputs
# exist. --force rebuilds.
set -euo pipefail

sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="build/tiny-models"
BUILDER="test/fixtures/models/build_tiny_models.py"
FIXTURE="test/fixtures/embedded-trajectories.json"
STAMP="$OUT/.stamp"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

bash scripts/python-env.sh

# One build at a time: concurrent test runs wait here, then find the stamp up to date.
mkdir -p "$OUT"
exec 8>"build/.tiny-models.lock"
if command -v flock >/dev/null 2>&1; then flock 8; fi

WANT="$(cat "$BUILDER" "$FIXTURE" trainer/requirements-test.txt | sha256 | cut -d' ' -f1)"
OUTPUTS=(
  "$OUT/glossa-tiny-qwen2/config.json"
  "$OUT/glossa-tiny-qwen2/tokenizer.json"
  "$OUT/glossa-tiny-qwen2/tokenizer_config.json"
  "$OUT/glossa-tiny-qwen2/onnx/model.onnx"
  "$OUT/glossa-tiny-qwen2-split/onnx/model.onnx_data_1"
  "$OUT/glossa-tiny-bert/config.json"
  "$OUT/glossa-tiny-bert/tokenizer.json"
  "$OUT/glossa-tiny-bert/onnx/model.onnx"
  "$OUT/glossa-tiny-bert/parity.json"
)
complete=1
for f in "${OUTPUTS[@]}"; do [[ -f "$f" ]] || complete=0; done
if [[ $FORCE == 0 && $complete == 1 && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "tiny models up to date: $ROOT/$OUT"
  exit 0
fi

START=$(date +%s)
rm -f "$STAMP"
.venv/bin/python "$BUILDER" --fixture "$FIXTURE" --out "$OUT"

# The encoder must load in Node and match the PyTorch reference embeddings.
node - <<'JS'
const path = require("node:path");
const fs = require("node:fs");
const { env, pipeline } = require("@huggingface/transformers");
(async () => {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  const dir = path.resolve("build/tiny-models/glossa-tiny-bert");
  const ref = JSON.parse(fs.readFileSync(path.join(dir, "parity.json"), "utf8"));
  for (const [dtype, tol] of [["fp32", 1e-4], ["q8", 0.05]]) {
    const extract = await pipeline("feature-extraction", dir, { dtype, local_files_only: true });
    let worst = 0;
    for (const r of ref.texts) {
      const ids = extract.tokenizer.encode(r.text);
      if (JSON.stringify(ids) !== JSON.stringify(r.input_ids)) throw new Error(`bert token ids differ for ${r.text}`);
      const out = await extract(r.text, { pooling: "mean", normalize: true });
      const v = Array.from(out.data);
      for (let i = 0; i < v.length; i++) worst = Math.max(worst, Math.abs(v[i] - r.embedding[i]));
    }
    if (!(worst <= tol)) throw new Error(`bert ${dtype} embeddings differ from PyTorch: max abs diff ${worst}`);
    console.log(`[tiny-models] verified (node, bert ${dtype}): ${ref.texts.length} embeddings, max abs diff ${worst.toExponential(1)}`);
    await extract.dispose();
  }
})().catch((e) => {
  console.error(`[tiny-models] node check failed: ${e.message}`);
  process.exit(1);
});
JS

echo "$WANT" >"$STAMP"
echo "tiny models built: $ROOT/$OUT in $(($(date +%s) - START))s"
