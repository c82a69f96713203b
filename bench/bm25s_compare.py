"""bm25s on exactly the tokens of Glossa's lexical index: latency and top-10 agreement.

Usage (called by bench/retrieval-lexical.ts):
  python bench/bm25s_compare.py CORPUS_TOKENS QUERY_TOKENS REPEAT OURS_JSON

CORPUS_TOKENS holds one document per line (space-separated terms, in our doc-id order); the
index is that list repeated REPEAT times, as our large index is. QUERY_TOKENS holds one query per
line. OURS_JSON has our p50/p95 (ms) and our top-10 doc ids per query.
"""

import json
import sys
import time

import bm25s
import numpy as np

TOPK = 10


def main() -> None:
    corpus_file, query_file, repeat, ours_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(corpus_file, encoding="utf-8") as f:
        docs = [line.rstrip("\n").split(" ") if line.strip() else [] for line in f]
    docs = docs * repeat
    with open(query_file, encoding="utf-8") as f:
        queries = [line.rstrip("\n").split(" ") if line.strip() else [] for line in f]
    ours = json.load(open(ours_file, encoding="utf-8"))

    try:
        import numba  # noqa: F401

        backend = "numba"
    except ImportError:
        backend = "numpy"
    started = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene", backend=backend)
    retriever.index(docs, show_progress=False)
    build_s = time.perf_counter() - started
    vocab = retriever.vocab_dict

    # Unknown terms contribute nothing on our side either; bm25s needs them removed.
    known = [[t for t in q if t in vocab] for q in queries]
    usable = [i for i, q in enumerate(known) if q]
    retriever.retrieve([known[usable[0]]], k=TOPK, show_progress=False, n_threads=1)  # JIT warm-up
    times = []
    tops = {}
    for i in usable:
        t = time.perf_counter()
        results, _scores = retriever.retrieve([known[i]], k=TOPK, show_progress=False, n_threads=1)
        times.append((time.perf_counter() - t) * 1000)
        tops[i] = [int(d) for d in results[0]]
    times.sort()
    p50 = times[len(times) // 2]
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]

    same = total = identical = 0
    for i in usable:
        theirs = set(tops[i])
        mine = ours["tops"][i]
        same += len(theirs & set(mine))
        total += len(mine)
        identical += int(theirs == set(mine))
    print(
        f"bm25s {bm25s.__version__} ({backend} backend, numpy {np.__version__}): "
        f"{len(docs):,} docs indexed in {build_s:.1f} s; "
        f"{len(usable)} queries: p50 {p50:.2f} ms, p95 {p95:.2f} ms"
    )
    print(
        f"ours / bm25s: p50 {ours['p50'] / p50:.2f}x, p95 {ours['p95'] / p95:.2f}x (below 1 = ours faster); "
        f"top-10 overlap {100 * same / max(total, 1):.1f}% of our results, "
        f"identical sets for {100 * identical / max(len(usable), 1):.1f}% of queries "
        "(ties at the cut-off may differ in order)"
    )


if __name__ == "__main__":
    main()
