#!/usr/bin/env bash
# npm run bench:retrieval — the retrieval benchmarks on real data, printing their figures:
#   lexical: import, build, load, RSS, headword / sentence-scan / BM25 latency at ~425k and 3M entries, vs bm25s;
#   dense: MiniLM encoding, HNSW build, query encoding, search, recall@10 vs exact, vs faiss; hybrid latency;
#   server: /retrieve throughput and latency.
# Needs Debian's edict and dict-freedict-eng-jpn (installed here if missing) and builds its own Python venvs.
# DENSE_ENTRIES (default 50000) sets how many entries get vectors: a full 425k build takes hours on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
for pkg in edict dict-freedict-eng-jpn; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
  }
done
bash bench/setup-bench-venv.sh
bash bench/setup-minilm.sh
echo "== lexical"
npx tsx bench/retrieval-lexical.ts
echo "== dense and hybrid"
npx tsx bench/retrieval-dense.ts --entries "${DENSE_ENTRIES:-50000}"
echo "== retrieval server"
npx tsx bench/retrieval-server.ts
echo "== retrieval server over the ~425k-entry lexical index"
npx tsx bench/retrieval-server.ts --index .cache/bench-retrieval/index-base
