"""faiss IndexHNSWFlat on the vectors bench/retrieval-dense.ts encoded, beside hnswlib's results on them.

    .cache/minilm-venv/bin/python bench/faiss_compare.py --dir .cache/bench-dense --dim 384 --k 10 \
        --m 16 --ef-construction 200 --ef-search 64

Reads <dir>/vectors.f32 and <dir>/queries.f32 (row-major float32, unit-length rows) and <dir>/hnswlib-labels.i32
(int32, k labels per query, -1 for none). Computes the exact top-k by inner product (= cosine), the recall@k of
hnswlib's labels, and builds faiss's HNSW with the same M, efConstruction and efSearch, single-threaded like
hnswlib-node, timing the build and one query at a time. Prints one JSON object.
"""

import argparse
import json
import time
from pathlib import Path

import faiss
import numpy as np


def exact_topk(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), 64):
        scores = queries[start : start + 64] @ vectors.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
        out[start : start + 64] = np.take_along_axis(top, order, axis=1)
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    hits = sum(len(set(f[f >= 0].tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / truth.size


def percentile(values: list, q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--dim", type=int, required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=200)
    parser.add_argument("--ef-search", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    faiss.omp_set_num_threads(args.threads)

    vectors = np.fromfile(args.dir / "vectors.f32", dtype=np.float32).reshape(-1, args.dim)
    queries = np.fromfile(args.dir / "queries.f32", dtype=np.float32).reshape(-1, args.dim)
    hnswlib_labels = np.fromfile(args.dir / "hnswlib-labels.i32", dtype=np.int32).reshape(-1, args.k)

    started = time.perf_counter()
    truth = exact_topk(vectors, queries, args.k)
    exact_s = time.perf_counter() - started

    index = faiss.IndexHNSWFlat(args.dim, args.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = args.ef_construction
    started = time.perf_counter()
    index.add(vectors)
    build_s = time.perf_counter() - started
    index.hnsw.efSearch = args.ef_search

    latencies = []
    found = np.empty((len(queries), args.k), dtype=np.int64)
    for i in range(len(queries)):
        q = queries[i : i + 1]
        t0 = time.perf_counter()
        _, labels = index.search(q, args.k)
        latencies.append((time.perf_counter() - t0) * 1000)
        found[i] = labels[0]

    print(
        json.dumps(
            {
                "vectors": len(vectors),
                "queries": len(queries),
                "threads": args.threads,
                "exactSeconds": exact_s,
                "hnswlibRecallAtK": recall(hnswlib_labels.astype(np.int64), truth),
                "faiss": {
                    "version": faiss.__version__,
                    "buildSeconds": build_s,
                    "insertPerSec": len(vectors) / build_s,
                    "searchP50Ms": percentile(latencies, 50),
                    "searchP95Ms": percentile(latencies, 95),
                    "recallAtK": recall(found, truth),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
