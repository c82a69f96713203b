/**
 * Dense retrieval benchmark on real embeddings of real dictionary entries; prints its figures.
 *
 *   bash bench/setup-minilm.sh            (once: venv, ONNX export of all-MiniLM-L6-v2, parity check)
 *   npx tsx bench/retrieval-dense.ts [--entries 50000|all] [--queries 500] [--dtype fp32|q8]
 *        [--m 16] [--ef-construction 200] [--ef-search 200] [--batch 64] [--threads N] [--reuse-vectors]
 *
 * Corpus: CC-CEDICT (../shared/data) + EDICT (/usr/share/edict/edict) + FreeDict eng-jpn (/usr/share/dictd),
 * ~420k entries; `--entries N` takes every (total/N)-th entry so all three stay represented. Passages are
 * `headword: gloss`. Queries are English sentences from Tatoeba (every k-th line of cmn.txt).
 *
 * Measures: Node parity of the ONNX encoder with sentence-transformers, passage encoding throughput, HNSW
 * insertion rate (hnswlib-node, single-threaded), index save/load, query encoding p50/p95, HNSW search p50/p95,
 * recall@10 against exact search (brute force in JS); then runs bench/faiss_compare.py for faiss IndexHNSWFlat
 * with the same M / efConstruction / efSearch on the same vectors and prints the two side by side.
 */
import { execFileSync } from "node:child_process";
import { existsSync, promises as fs, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DenseRetriever } from "../extension/core/retrieval/dense/denseRetriever";
import { SentenceEncoder } from "../extension/core/retrieval/dense/encoder";
import { corpusFingerprint, passagesOf } from "../extension/core/retrieval/dense/passages";
import { DenseIndex } from "../extension/core/retrieval/dense/vectorIndex";
import { HybridRetriever } from "../extension/core/retrieval/hybrid";
import { importCedict } from "../extension/core/retrieval/importers/cedict";
import { importDictd } from "../extension/core/retrieval/importers/dictd";
import { importEdict } from "../extension/core/retrieval/importers/edict";
import { readLines } from "../extension/core/retrieval/importers/lines";
import { LexicalIndex } from "../extension/core/retrieval/lexical";
import type { Entry } from "../extension/core/retrieval/types";

const ROOT = resolve(__dirname, "..");
const SHARED = resolve(ROOT, "..", "shared", "data");
const CEDICT = join(SHARED, "cc-cedict", "cedict_1_0_ts_utf-8_mdbg.txt.gz");
const EDICT = "/usr/share/edict/edict";
const FREEDICT = "/usr/share/dictd/freedict-eng-jpn.index";
const TATOEBA = join(SHARED, "tatoeba-cmn-eng", "cmn.txt");
const MODEL = join(ROOT, ".cache", "models", "all-MiniLM-L6-v2");
const WORK = join(ROOT, ".cache", "bench-dense");
const PYTHON = join(ROOT, ".cache", "minilm-venv", "bin", "python");
const K = 10;

interface Args {
  entries: number;
  queries: number;
  dtype: "fp32" | "q8";
  m: number;
  efConstruction: number;
  efSearch: number;
  batch: number;
  threads?: number;
  reuseVectors: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    entries: 50_000,
    queries: 500,
    dtype: "fp32",
    m: 16,
    efConstruction: 200,
    efSearch: 200,
    batch: 64,
    reuseVectors: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === "--entries") {
      const v = value();
      args.entries = v === "all" ? Number.POSITIVE_INFINITY : Number(v);
    } else if (flag === "--queries") args.queries = Number(value());
    else if (flag === "--dtype") args.dtype = value() === "q8" ? "q8" : "fp32";
    else if (flag === "--m") args.m = Number(value());
    else if (flag === "--ef-construction") args.efConstruction = Number(value());
    else if (flag === "--ef-search") args.efSearch = Number(value());
    else if (flag === "--batch") args.batch = Number(value());
    else if (flag === "--threads") args.threads = Number(value());
    else if (flag === "--reuse-vectors") args.reuseVectors = true;
    else throw new Error(`unknown argument ${flag}`);
  }
  return args;
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

const ms = (v: number) => `${v.toFixed(3)} ms`;
const rate = (v: number) => `${v.toFixed(0)}/s`;

async function loadCorpus(): Promise<{ entries: Entry[]; counts: Record<string, number> }> {
  const entries: Entry[] = [];
  const counts: Record<string, number> = {};
  const keep = (corpus: string) => (e: Entry) => {
    entries.push({ id: e.id, headword: e.headword, gloss: e.gloss, lang: e.lang });
    counts[corpus] = (counts[corpus] ?? 0) + 1;
  };
  await importCedict(CEDICT, "cc-cedict", keep("cc-cedict"));
  if (existsSync(EDICT)) await importEdict(EDICT, "edict", {}, keep("edict"));
  else console.log(`(no ${EDICT}: apt-get install edict)`);
  if (existsSync(FREEDICT)) await importDictd(FREEDICT, "freedict-eng-jpn", {}, keep("freedict-eng-jpn"));
  else console.log(`(no ${FREEDICT}: apt-get install dict-freedict-eng-jpn)`);
  return { entries, counts };
}

async function loadQueries(n: number): Promise<string[]> {
  const all: string[] = [];
  for await (const { line } of readLines(TATOEBA)) {
    const english = line.split("\t")[0]?.trim();
    if (english && english.split(" ").length >= 4) all.push(english);
  }
  const step = Math.max(1, Math.floor(all.length / n));
  return all.filter((_, i) => i % step === 0).slice(0, n);
}

/** Exact top-k by inner product over unit vectors (= cosine), the ground truth for recall. */
function exactTopK(vectors: Float32Array, dim: number, query: Float32Array, k: number): number[] {
  const count = vectors.length / dim;
  const best: Array<{ label: number; score: number }> = [];
  for (let row = 0; row < count; row++) {
    let score = 0;
    const base = row * dim;
    for (let d = 0; d < dim; d++) score += (vectors[base + d] as number) * (query[d] as number);
    if (best.length < k || score > (best[best.length - 1] as { score: number }).score) {
      best.push({ label: row, score });
      best.sort((a, b) => b.score - a.score);
      if (best.length > k) best.pop();
    }
  }
  return best.map((b) => b.label);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(join(MODEL, "onnx", "model.onnx"))) {
    throw new Error(`${MODEL} is missing: run \`bash bench/setup-minilm.sh\` first`);
  }
  console.log(`dense retrieval benchmark: encoder all-MiniLM-L6-v2 (${args.dtype}), hnswlib-node cosine`);
  console.log(`M=${args.m} efConstruction=${args.efConstruction} efSearch=${args.efSearch} k=${K}`);

  let t = performance.now();
  const { entries: all, counts } = await loadCorpus();
  console.log(
    `corpus: ${all.length} entries (${Object.entries(counts)
      .map(([c, n]) => `${c} ${n}`)
      .join(", ")}) imported in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  const step = Number.isFinite(args.entries) ? Math.max(1, Math.floor(all.length / args.entries)) : 1;
  const entries = all.filter((_, i) => i % step === 0).slice(0, args.entries);
  const passages = passagesOf(entries);
  console.log(
    `indexed: ${passages.length} entries${step > 1 ? ` (every ${step}th of the ${all.length}; --entries all for the whole corpus)` : ""}`,
  );

  const encoder = new SentenceEncoder({
    modelPath: MODEL,
    dtype: args.dtype,
    batchSize: args.batch,
    ...(args.threads ? { threads: args.threads } : {}),
  });
  t = performance.now();
  await encoder.load();
  console.log(`encoder load: ${ms(performance.now() - t)}`);
  const parity = JSON.parse(readFileSync(join(MODEL, "parity.json"), "utf8")) as {
    texts: Array<{ text: string; embedding: number[] }>;
  };
  const parityVectors = await encoder.encodePassages(parity.texts.map((p) => p.text));
  let worst = 0;
  let minCos = 1;
  parity.texts.forEach((p, i) => {
    let dot = 0;
    p.embedding.forEach((v, d) => {
      const got = parityVectors[i]?.[d] ?? Number.NaN;
      worst = Math.max(worst, Math.abs(v - got));
      dot += v * got;
    });
    minCos = Math.min(minCos, dot);
  });
  console.log(
    `parity with sentence-transformers (${parity.texts.length} texts, incl. one past 256 tokens): max abs diff ${worst.toExponential(1)}, min cosine ${minCos.toFixed(6)}`,
  );
  const dim = await encoder.dimension();

  await fs.mkdir(WORK, { recursive: true });
  const fingerprint = corpusFingerprint(passages);
  const vectorFile = join(WORK, "vectors.f32");
  const vectorKey = join(WORK, "vectors.key");
  const key = `${encoder.id} ${fingerprint}`;
  let vectors: Float32Array;
  const reusable =
    args.reuseVectors && existsSync(vectorFile) && existsSync(vectorKey) && readFileSync(vectorKey, "utf8") === key;
  if (reusable) {
    const bytes = await fs.readFile(vectorFile);
    vectors = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    console.log(`passage encoding: reused ${vectorFile} (same encoder and corpus)`);
  } else {
    vectors = new Float32Array(passages.length * dim);
    t = performance.now();
    const chunk = args.batch * 16;
    for (let start = 0; start < passages.length; start += chunk) {
      const rows = await encoder.encodePassages(passages.slice(start, start + chunk).map((p) => p.text));
      rows.forEach((row, i) => {
        vectors.set(row, (start + i) * dim);
      });
      if (start % (chunk * 10) === 0 && start > 0) {
        const s = (performance.now() - t) / 1000;
        process.stdout.write(`  encoded ${start}/${passages.length} (${rate(start / s)})\r`);
      }
    }
    const seconds = (performance.now() - t) / 1000;
    console.log(
      `passage encoding: ${passages.length} in ${seconds.toFixed(1)} s = ${rate(passages.length / seconds)} (batch ${args.batch})`,
    );
    await fs.writeFile(vectorFile, Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength));
    await fs.writeFile(vectorKey, key);
  }

  const queries = await loadQueries(args.queries);
  const queryVectors: Float32Array[] = [];
  const encodeTimes: number[] = [];
  await encoder.encodeQueries(["warm-up"]);
  for (const q of queries) {
    t = performance.now();
    const [v] = await encoder.encodeQueries([q]);
    encodeTimes.push(performance.now() - t);
    queryVectors.push(v as Float32Array);
  }
  console.log(
    `query encoding (${queries.length} Tatoeba sentences, one at a time): p50 ${ms(quantile(encodeTimes, 0.5))}, p95 ${ms(quantile(encodeTimes, 0.95))}`,
  );

  const index = DenseIndex.create(
    dim,
    { m: args.m, efConstruction: args.efConstruction, efSearch: args.efSearch },
    passages.length,
  );
  t = performance.now();
  for (const p of passages) {
    index.upsert(p.ordinal, { id: p.id, hash: "" }, vectors.subarray(p.ordinal * dim, (p.ordinal + 1) * dim));
    if (p.ordinal % 10_000 === 0 && p.ordinal > 0) {
      const s = (performance.now() - t) / 1000;
      process.stdout.write(`  inserted ${p.ordinal}/${passages.length} (${rate(p.ordinal / s)})\r`);
    }
  }
  const insertSeconds = (performance.now() - t) / 1000;
  console.log(
    `HNSW build (single thread): ${passages.length} in ${insertSeconds.toFixed(1)} s = ${rate(passages.length / insertSeconds)}`,
  );

  const indexDir = join(WORK, "index");
  t = performance.now();
  const manifest = await index.save(indexDir, {
    encoderId: encoder.id,
    corpusFingerprint: fingerprint,
    complete: true,
    progress: { done: passages.length, total: passages.length },
  });
  const saveMs = performance.now() - t;
  t = performance.now();
  await DenseIndex.open(indexDir, { encoderId: encoder.id, corpusFingerprint: fingerprint }, { ledger: false });
  console.log(
    `index save ${ms(saveMs)}, verified load ${ms(performance.now() - t)}, ${(manifest.files.index.bytes / 2 ** 20).toFixed(1)} MiB`,
  );

  const searchTimes: number[] = [];
  const labels = new Int32Array(queries.length * K).fill(-1);
  queryVectors.forEach((q, qi) => {
    t = performance.now();
    const found = index.search(q, K);
    searchTimes.push(performance.now() - t);
    found.forEach((f, j) => {
      labels[qi * K + j] = f.ordinal;
    });
  });
  t = performance.now();
  let agree = 0;
  const truths = queryVectors.map((q) => new Set(exactTopK(vectors, dim, q, K)));
  truths.forEach((truth, qi) => {
    for (let j = 0; j < K; j++) if (truth.has(labels[qi * K + j] as number)) agree++;
  });
  const recall = agree / (queries.length * K);
  const exactSeconds = (performance.now() - t) / 1000;
  const hybridEstimate = quantile(encodeTimes, 0.95) + quantile(searchTimes, 0.95);
  console.log(
    `HNSW search: p50 ${ms(quantile(searchTimes, 0.5))}, p95 ${ms(quantile(searchTimes, 0.95))}; recall@${K} vs exact ${recall.toFixed(4)} (exact search in JS took ${exactSeconds.toFixed(1)} s)`,
  );
  console.log(`dense query end to end, p95 encode + p95 search: ${ms(hybridEstimate)}`);
  // The query-time trade-off on the same graph: efSearch is a search setting (glossa.retrieval.denseSearchEf).
  for (const ef of [64, 128, 200, 256]) {
    index.setEfSearch(ef);
    const times: number[] = [];
    let found = 0;
    queryVectors.forEach((q, qi) => {
      const started = performance.now();
      const hits = index.search(q, K);
      times.push(performance.now() - started);
      for (const h of hits) if (truths[qi]!.has(h.ordinal)) found++;
    });
    console.log(
      `  efSearch ${String(ef).padStart(3)}: recall@${K} ${(found / (queries.length * K)).toFixed(3)}, search p50 ${ms(quantile(times, 0.5))}, p95 ${ms(quantile(times, 0.95))}`,
    );
  }
  index.setEfSearch(args.efSearch);

  // Hybrid as the agent runs it: BM25/headword over the whole corpus and dense over the indexed
  // entries, queried in parallel and fused by reciprocal rank; the time includes query encoding.
  t = performance.now();
  const lexical = new LexicalIndex();
  for (const e of all) lexical.add(e, e.id.slice(0, e.id.indexOf(":")));
  const frozen = lexical.freeze();
  console.log(
    `hybrid: lexical index over all ${all.length} entries built in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  const dense = await DenseRetriever.open(
    indexDir,
    encoder,
    fingerprint,
    (ordinal) => {
      const e = entries[ordinal];
      return (
        e && { id: e.id, headword: e.headword, gloss: e.gloss, lang: e.lang, source: e.id.slice(0, e.id.indexOf(":")) }
      );
    },
    frozen.corpusIds,
  );
  const hybrid = new HybridRetriever([
    { name: "lexical", retriever: frozen },
    { name: "dense", retriever: dense },
  ]);
  await hybrid.search("warm-up", { topk: K });
  const hybridTimes: number[] = [];
  for (const q of queries) {
    t = performance.now();
    await hybrid.search(q, { topk: K });
    hybridTimes.push(performance.now() - t);
  }
  console.log(
    `hybrid search incl. query encoding (${queries.length} queries, top-${K}, RRF of lexical over ${all.length} and dense over ${passages.length}): p50 ${ms(quantile(hybridTimes, 0.5))}, p95 ${ms(quantile(hybridTimes, 0.95))}`,
  );
  await encoder.dispose();

  const queryBuffer = new Float32Array(queries.length * dim);
  queryVectors.forEach((q, i) => {
    queryBuffer.set(q, i * dim);
  });
  await fs.writeFile(join(WORK, "queries.f32"), Buffer.from(queryBuffer.buffer));
  await fs.writeFile(join(WORK, "hnswlib-labels.i32"), Buffer.from(labels.buffer));
  if (!existsSync(PYTHON)) {
    console.log(`faiss comparison skipped: ${PYTHON} is missing (bash bench/setup-minilm.sh)`);
    return;
  }
  const output = execFileSync(
    PYTHON,
    [
      join(ROOT, "bench", "faiss_compare.py"),
      ...["--dir", WORK, "--dim", String(dim), "--k", String(K), "--m", String(args.m)],
      ...["--ef-construction", String(args.efConstruction), "--ef-search", String(args.efSearch)],
    ],
    { encoding: "utf8", maxBuffer: 1 << 24 },
  );
  const faiss = JSON.parse(output.trim().split("\n").at(-1) ?? "{}") as {
    hnswlibRecallAtK: number;
    faiss: { version: string; insertPerSec: number; searchP50Ms: number; searchP95Ms: number; recallAtK: number };
  };
  const rows: Array<[string, number, number, (v: number) => string]> = [
    ["build (vectors/s, 1 thread)", passages.length / insertSeconds, faiss.faiss.insertPerSec, rate],
    ["search p50", quantile(searchTimes, 0.5), faiss.faiss.searchP50Ms, ms],
    ["search p95", quantile(searchTimes, 0.95), faiss.faiss.searchP95Ms, ms],
    [`recall@${K}`, recall, faiss.faiss.recallAtK, (v) => v.toFixed(4)],
  ];
  console.log(
    `\nside by side on the same ${passages.length} vectors (faiss ${faiss.faiss.version} IndexHNSWFlat, inner product):`,
  );
  console.log(`${"".padEnd(28)}${"hnswlib-node".padStart(16)}${"faiss".padStart(16)}${"ours/faiss".padStart(12)}`);
  for (const [name, ours, theirs, fmt] of rows) {
    console.log(
      `${name.padEnd(28)}${fmt(ours).padStart(16)}${fmt(theirs).padStart(16)}${(ours / theirs).toFixed(2).padStart(12)}`,
    );
  }
  console.log(
    `(hnswlib recall checked again in Python with numpy's exact search: ${faiss.hnswlibRecallAtK.toFixed(4)})`,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
