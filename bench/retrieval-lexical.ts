/**
 * Lexical retrieval benchmark on real dictionaries; prints its figures (no pass/fail thresholds).
 *
 *   npx tsx bench/retrieval-lexical.ts [--repeat 7] [--queries 2000] [--limit N] [--no-bm25s]
 *   npx tsx bench/retrieval-lexical.ts --only-wiktextract   (the wiktextract import throughput alone)
 *
 * Corpus: CC-CEDICT + EDICT (/usr/share/edict/edict) + FreeDict eng-jpn (~420k entries), and a
 * large corpus made by repeating those entries `--repeat` times (default 7, ~3M) as separate
 * corpora `<id>#r<k>` whose entry ids are `<id>#r<k>:<original id>`, so every entry is new to the
 * index while texts (and so posting-list shapes) stay real. `--limit N` keeps the first N entries
 * of each source (a quick check).
 *
 * For each scale, in a child process: the store update from entry JSONL (import, then the index
 * build and write) with its peak RSS; size on disk; then in a fresh child process: cold load and
 * RSS, and p50/p95 latency of headword lookup, sentence scan and BM25 over realistic queries, each
 * after a warm-up on 1,000 other queries of the same kind. Then bm25s (bench/bm25s_compare.py, in the venv
 * made by bench/setup-bench-venv.sh) on exactly our tokens: latency ratio and top-10 overlap.
 */
import { execFileSync } from "node:child_process";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { readCorpus } from "../extension/core/retrieval/corpora";
import type { ImportReport } from "../extension/core/retrieval/importers/report";
import { importWiktextract } from "../extension/core/retrieval/importers/wiktextract";
import { IndexStore } from "../extension/core/retrieval/indexStore";
import { allQueryTerms, documentTerms, queryTerms } from "../extension/core/retrieval/lexicalTerms";
import type { Entry } from "../extension/core/retrieval/types";

const ROOT = resolve(__dirname, "..");
const WORK = join(ROOT, ".cache", "bench-retrieval");
const DATA = resolve(ROOT, "..", "shared", "data");
const TOPK = 10;
/** Queries of each kind run before a latency figure is taken, drawn apart from the measured ones. */
const WARMUP_QUERIES = 1000;

interface Args {
  repeat: number;
  queries: number;
  limit: number;
  bm25s: boolean;
}

function parseArgs(argv: string[]): Args {
  const value = (name: string, fallback: number) => {
    const at = argv.indexOf(name);
    return at >= 0 ? Number(argv[at + 1]) : fallback;
  };
  return {
    repeat: value("--repeat", 7),
    queries: value("--queries", 2000),
    limit: value("--limit", Number.POSITIVE_INFINITY),
    bm25s: !argv.includes("--no-bm25s"),
  };
}

type Importer = (path: string, corpus: string, onEntry: (e: Entry) => void) => Promise<ImportReport>;

/** The dictionaries, each with the importer that reads it (EDICT and dictd importers are used when present). */
function sources(): Array<{ id: string; path: string; importer: Importer | null; why?: string }> {
  const optional = (module: string, name: string, path: string): { importer: Importer | null; why?: string } => {
    if (!existsSync(path)) return { importer: null, why: `${path} is not installed` };
    try {
      // Loaded by name so the benchmark runs (and says what it skipped) where an importer is absent.
      const loaded = require(module) as Record<string, unknown>;
      const fn = loaded[name] as
        | ((p: string, c: string, o: object, on: (e: Entry) => void) => Promise<ImportReport>)
        | undefined;
      if (typeof fn !== "function") return { importer: null, why: `${module} has no ${name}` };
      return { importer: (p, c, on) => fn(p, c, {}, on) };
    } catch (error) {
      return { importer: null, why: `${module} not available (${(error as Error).message.split("\n")[0]})` };
    }
  };
  return [
    {
      id: "cc-cedict",
      path: join(DATA, "cc-cedict", "cedict_1_0_ts_utf-8_mdbg.txt.gz"),
      importer: (p, c, on) => readCorpus({ path: p, id: c, format: "cedict" }, on),
    },
    {
      id: "edict",
      path: "/usr/share/edict/edict",
      ...optional("../extension/core/retrieval/importers/edict", "importEdict", "/usr/share/edict/edict"),
    },
    {
      id: "freedict-eng-jpn",
      path: "/usr/share/dictd/freedict-eng-jpn.index",
      ...optional(
        "../extension/core/retrieval/importers/dictd",
        "importDictd",
        "/usr/share/dictd/freedict-eng-jpn.index",
      ),
    },
  ];
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function fmtUs(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(2)} ms`;
}

async function dirSize(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir, { recursive: true })) {
    const info = await stat(join(dir, name));
    if (info.isFile()) total += info.size;
  }
  return total;
}

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface QuerySet {
  headword: string[];
  scan: string[];
  bm25: string[];
}

/** Realistic queries: headwords with normalization variants, real sentences, English gloss words. */
function makeQueries(entries: Entry[], count: number, seed: number): QuerySet {
  const random = mulberry32(seed);
  const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;
  const headword: string[] = [];
  const toFullWidth = (s: string) => s.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
  while (headword.length < count) {
    const e = pick(entries);
    const forms = [e.headword, ...(e.variants ?? [])];
    const form = pick(forms);
    const variant = Math.floor(random() * 4);
    headword.push(
      variant === 0 ? form : variant === 1 ? form.toUpperCase() : variant === 2 ? toFullWidth(form) : ` ${form}。`,
    );
  }
  const tatoeba = readFileSync(join(DATA, "tatoeba-cmn-eng", "cmn.txt"), "utf8")
    .split("\n")
    .map((l) => l.split("\t"))
    .filter((f) => f.length >= 2);
  const ntrex = (name: string) =>
    readFileSync(join(DATA, "ntrex-128", name), "utf8")
      .split("\n")
      .filter((l) => l.trim());
  const cjkSentences = [
    ...tatoeba.map((f) => f[1]!),
    ...ntrex("newstest2019-ref.zho-CN.txt"),
    ...ntrex("newstest2019-ref.jpn.txt"),
  ];
  const englishSentences = [...tatoeba.map((f) => f[0]!), ...ntrex("newstest2019-src.eng.txt")];
  const scan: string[] = [];
  while (scan.length < count) scan.push(pick(cjkSentences));
  const glossWords = entries
    .filter((e) => e.glossLang === "en" || /^[\x20-\x7e]+$/.test(e.gloss))
    .slice(0, 200_000)
    .flatMap((e) => e.gloss.split(/[^A-Za-z]+/).filter((w) => w.length > 3))
    .slice(0, 500_000);
  const bm25: string[] = [];
  while (bm25.length < count) {
    const kind = bm25.length % 4;
    if (kind === 0) bm25.push(pick(glossWords));
    else if (kind === 1) bm25.push(`${pick(glossWords)} ${pick(glossWords)}`);
    else if (kind === 2) bm25.push(pick(englishSentences));
    else bm25.push(pick(cjkSentences));
  }
  return { headword, scan, bm25 };
}

/**
 * Child process: cold load, RSS, latencies, and our top-10 for the bm25s overlap check. Each latency
 * figure is taken after running a separate warm-up set of the same kind of queries (other entries,
 * other sentences), so the code is compiled but the measured queries' data is not in the CPU caches.
 */
async function child(root: string, queriesFile: string, outFile: string): Promise<void> {
  const started = performance.now();
  const { index } = await new IndexStore(root).load();
  const loadMs = performance.now() - started;
  const rssAfterLoad = process.memoryUsage().rss;
  const peakRssAfterLoad = process.resourceUsage().maxRSS * 1024;
  const { measured: queries, warmup } = JSON.parse(readFileSync(queriesFile, "utf8")) as {
    measured: QuerySet;
    warmup: QuerySet;
  };
  const warmupOf = new Map<string[], string[]>([
    [queries.headword, warmup.headword],
    [queries.scan, warmup.scan],
    [queries.bm25, warmup.bm25],
  ]);
  const time = (list: string[], run: (q: string) => unknown) => {
    for (const q of warmupOf.get(list)!) run(q);
    const times: number[] = [];
    let results = 0;
    for (const q of list) {
      const t = performance.now();
      const out = run(q) as unknown[];
      times.push(performance.now() - t);
      results += out.length ? 1 : 0;
    }
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), p95: percentile(times, 95), answered: results / list.length };
  };
  const headword = time(queries.headword, (q) => index.lookupHeadword(q, { topk: 5 }));
  const scan = time(queries.scan, (q) => index.scan(index.key(q)));
  const bm25 = time(queries.bm25, (q) => index.bm25(q, TOPK));
  const bm25AllTerms = time(queries.bm25, (q) => index.bm25Terms(allQueryTerms(q), TOPK));
  const search = time(queries.bm25, (q) => index.searchSync(q, { topk: TOPK }));
  const overlap = { same: 0, total: 0 };
  const tops = queries.bm25.map((q) => {
    const full = index.bm25Terms(allQueryTerms(q), TOPK).map((h) => h.doc);
    const dropped = new Set(index.bm25(q, TOPK).map((h) => h.doc));
    overlap.same += full.filter((d) => dropped.has(d)).length;
    overlap.total += full.length;
    return index.bm25(q, TOPK).map((h) => h.doc);
  });
  await writeFile(
    outFile,
    JSON.stringify({
      loadMs,
      rssAfterLoad,
      peakRssAfterLoad,
      rssAfterQueries: process.memoryUsage().rss,
      headword,
      scan,
      bm25,
      bm25AllTerms,
      search,
      unigramDropOverlap: overlap.total ? overlap.same / overlap.total : 1,
      tops,
    }),
  );
}

interface BuildFigures {
  totalMs: number;
  importMs: number;
  buildMs: number;
  /** Peak resident set of the process that ran the update (its worker threads included), in bytes. */
  peakRss: number;
}

/** Child process: one wiktextract import that only counts entries (the importer alone), timed, with its peak RSS. */
async function wiktextractChild(file: string, outFile: string): Promise<void> {
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  let entries = 0;
  const report = await importWiktextract(file, "wiktextract", {}, () => {
    entries++;
  });
  const seconds = (performance.now() - started) / 1000;
  await writeFile(
    outFile,
    JSON.stringify({ seconds, entries, report, rssBefore, peakRss: process.resourceUsage().maxRSS * 1024 }),
  );
}

/**
 * The kaikki.org samples (every edition in ../shared/data) repeated to about `megabytes` MB, copy k's
 * words suffixed with ` k` so that every record is a new entry, as in a full dump.
 */
async function makeWiktextractFile(megabytes: number): Promise<string> {
  const file = join(WORK, `wiktextract-${megabytes}mb.jsonl`);
  if (existsSync(file)) return file;
  const dir = join(DATA, "wiktextract-kaikki-samples");
  const records = (await readdir(dir))
    .filter((n) => n.endsWith(".jsonl"))
    .sort()
    .flatMap((n) => readFileSync(join(dir, n), "utf8").split("\n"))
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { word?: unknown });
  const out = createWriteStream(`${file}.tmp`);
  let written = 0;
  for (let copy = 1; written < megabytes * 2 ** 20; copy++) {
    for (const r of records) {
      const line = `${JSON.stringify(copy === 1 ? r : { ...r, word: `${String(r.word)} ${copy}` })}\n`;
      written += Buffer.byteLength(line);
      if (!out.write(line)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
    }
  }
  await new Promise<void>((r, j) => out.end((error?: Error | null) => (error ? j(error) : r())));
  await rename(`${file}.tmp`, file);
  return file;
}

async function wiktextractThroughput(): Promise<void> {
  const megabytes = 256;
  const file = await makeWiktextractFile(megabytes);
  const bytes = (await stat(file)).size;
  const out = join(WORK, "wiktextract-child.json");
  execFileSync(process.execPath, ["-r", "tsx/cjs", __filename, "--wiktextract", file, out], {
    stdio: "inherit",
    cwd: ROOT,
  });
  const r = JSON.parse(readFileSync(out, "utf8")) as {
    seconds: number;
    entries: number;
    report: ImportReport;
    rssBefore: number;
    peakRss: number;
  };
  console.log(
    `\n== wiktextract: the kaikki.org samples repeated to ${(bytes / 2 ** 20).toFixed(0)} MiB (copy k's words end in " k")`,
  );
  console.log(
    `${r.report.imported.toLocaleString()} imported, ${r.report.skipped.toLocaleString()} skipped, ${r.report.malformed} malformed ` +
      `in ${r.seconds.toFixed(1)} s: ${(bytes / 2 ** 20 / r.seconds).toFixed(1)} MiB/s, ${Math.round(r.entries / r.seconds).toLocaleString()} entries/s; ` +
      `RSS ${(r.rssBefore / 2 ** 20).toFixed(0)} MiB before, peak ${(r.peakRss / 2 ** 20).toFixed(0)} MiB`,
  );
}

/** Child process: one store update from entry JSONL files, timed, with its peak RSS. */
async function buildChild(root: string, specsJson: string, outFile: string): Promise<void> {
  const specs = JSON.parse(specsJson) as Array<{ path: string; id: string }>;
  const marks: Record<string, number> = {};
  const store = new IndexStore(root, { onProgress: (m) => (marks[m.split(" ")[0]!] ??= performance.now()) });
  const started = performance.now();
  await store.update(specs.map((s) => ({ ...s, format: "jsonl" as const })));
  const finished = performance.now();
  const building = marks.building ?? started;
  const figures: BuildFigures = {
    totalMs: finished - started,
    importMs: building - started,
    buildMs: finished - building,
    peakRss: process.resourceUsage().maxRSS * 1024,
  };
  await writeFile(outFile, JSON.stringify(figures));
}

async function writeJsonl(file: string, entries: Iterable<Entry>): Promise<void> {
  const out = createWriteStream(file);
  for (const e of entries) {
    if (!out.write(`${JSON.stringify(e)}\n`)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((r, j) => out.end((error?: Error | null) => (error ? j(error) : r())));
}

async function scale(
  label: string,
  specs: Array<{ path: string; id: string }>,
  queriesFile: string,
  tokenFiles: { corpus: string; queries: string; repeat: number } | null,
  args: Args,
): Promise<void> {
  const root = join(WORK, `index-${label}`);
  await rm(root, { recursive: true, force: true });
  // The store update runs in its own process, as it does for a user, so its peak RSS is its own.
  const buildOut = join(WORK, `build-${label}.json`);
  execFileSync(
    process.execPath,
    ["--max-old-space-size=8192", "-r", "tsx/cjs", __filename, "--build", root, JSON.stringify(specs), buildOut],
    { stdio: "inherit", cwd: ROOT },
  );
  const built = JSON.parse(readFileSync(buildOut, "utf8")) as BuildFigures;
  const manifest = (await new IndexStore(root).manifest())!;
  const gen = join(root, readFileSync(join(root, "CURRENT"), "utf8").trim());
  const lexicalBytes = manifest.files.reduce((n, f) => n + f.size, 0);
  console.log(`\n== ${label}: ${manifest.entryCount.toLocaleString()} entries in ${manifest.corpora.length} corpora`);
  console.log(
    `store update ${(built.totalMs / 1000).toFixed(1)} s (entry JSONL import ${(built.importMs / 1000).toFixed(1)} s, ` +
      `index build + write ${(built.buildMs / 1000).toFixed(1)} s); peak RSS of the updating process ${(built.peakRss / 2 ** 20).toFixed(0)} MiB`,
  );
  console.log(
    `on disk: lexical index ${(lexicalBytes / 2 ** 20).toFixed(0)} MiB, whole folder incl. entry JSONL ${((await dirSize(gen)) / 2 ** 20).toFixed(0)} MiB`,
  );
  const out = join(WORK, `child-${label}.json`);
  execFileSync(
    process.execPath,
    ["--max-old-space-size=8192", "-r", "tsx/cjs", __filename, "--child", root, queriesFile, out],
    { stdio: "inherit", cwd: ROOT },
  );
  const r = JSON.parse(readFileSync(out, "utf8"));
  console.log(
    `cold load (new process) ${(r.loadMs / 1000).toFixed(2)} s; RSS after load ${(r.rssAfterLoad / 2 ** 20).toFixed(0)} MiB ` +
      `(peak while loading ${(r.peakRssAfterLoad / 2 ** 20).toFixed(0)} MiB), after queries ${(r.rssAfterQueries / 2 ** 20).toFixed(0)} MiB`,
  );
  const line = (name: string, x: { p50: number; p95: number; answered: number }) =>
    console.log(
      `${name.padEnd(28)} p50 ${fmtUs(x.p50).padStart(9)}  p95 ${fmtUs(x.p95).padStart(9)}  (${(x.answered * 100).toFixed(0)}% answered)`,
    );
  line("headword (normalized)", r.headword);
  line("sentence scan", r.scan);
  line("BM25 top-10", r.bm25);
  line("BM25, CJK unigrams kept", r.bm25AllTerms);
  line("search() combined", r.search);
  console.log(
    `top-10 overlap of BM25 with vs without CJK unigrams in the query: ${(r.unigramDropOverlap * 100).toFixed(1)}%`,
  );
  if (!tokenFiles || !args.bm25s) return;
  const python = join(ROOT, ".cache", "bench-venv", "bin", "python");
  if (!existsSync(python)) {
    console.log("bm25s: skipped (run bench/setup-bench-venv.sh first)");
    return;
  }
  const ours = join(WORK, `ours-${label}.json`);
  await writeFile(ours, JSON.stringify({ p50: r.bm25.p50, p95: r.bm25.p95, tops: r.tops }));
  execFileSync(
    python,
    [join(ROOT, "bench", "bm25s_compare.py"), tokenFiles.corpus, tokenFiles.queries, String(tokenFiles.repeat), ours],
    { stdio: "inherit" },
  );
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === "--child") return child(argv[1]!, argv[2]!, argv[3]!);
  if (argv[0] === "--build") return buildChild(argv[1]!, argv[2]!, argv[3]!);
  if (argv[0] === "--wiktextract") return wiktextractChild(argv[1]!, argv[2]!);
  if (argv[0] === "--only-wiktextract") return wiktextractThroughput();
  const args = parseArgs(argv);
  await mkdir(join(WORK, "entries"), { recursive: true });

  const all: Entry[] = [];
  const perSource: Entry[][] = [];
  const baseSpecs: Array<{ path: string; id: string }> = [];
  console.log("== import from source files");
  for (const source of sources()) {
    if (!source.importer) {
      console.log(`${source.id}: skipped, ${source.why}`);
      continue;
    }
    const entries: Entry[] = [];
    const t = performance.now();
    const report = await source.importer(source.path, source.id, (e) => {
      if (entries.length < args.limit) entries.push(e);
    });
    const seconds = (performance.now() - t) / 1000;
    console.log(
      `${source.id}: ${report.imported.toLocaleString()} imported, ${report.skipped} skipped, ${report.malformed} malformed ` +
        `in ${seconds.toFixed(1)} s (${Math.round(report.imported / seconds).toLocaleString()} entries/s)`,
    );
    const file = join(WORK, "entries", `${source.id}.jsonl`);
    await writeJsonl(file, entries);
    baseSpecs.push({ path: file, id: source.id });
    for (const e of entries) all.push(e);
    perSource.push(entries);
  }

  const queries = makeQueries(all, args.queries, 42);
  const queriesFile = join(WORK, "queries.json");
  await writeFile(queriesFile, JSON.stringify({ measured: queries, warmup: makeQueries(all, WARMUP_QUERIES, 7) }));
  // Exactly the tokens our index sees, for bm25s: one document or query per line, space-separated.
  const corpusTokens = join(WORK, "corpus-tokens.txt");
  const queryTokens = join(WORK, "query-tokens.txt");
  const tokenOut = createWriteStream(corpusTokens);
  for (const e of all) {
    if (!tokenOut.write(`${documentTerms(e).join(" ")}\n`))
      await new Promise<void>((r) => tokenOut.once("drain", () => r()));
  }
  await new Promise<void>((r) => tokenOut.end(r));
  await writeFile(queryTokens, `${queries.bm25.map((q) => queryTerms(q).join(" ")).join("\n")}\n`);

  await wiktextractThroughput();

  await scale("base", baseSpecs, queriesFile, { corpus: corpusTokens, queries: queryTokens, repeat: 1 }, args);

  if (args.repeat > 1) {
    const specs: Array<{ path: string; id: string }> = [...baseSpecs];
    for (let k = 2; k <= args.repeat; k++) {
      for (const [i, base] of baseSpecs.entries()) {
        const id = `${base.id}#r${k}`;
        const file = join(WORK, "entries", `${id}.jsonl`);
        const copies = perSource[i]!.map((e) => ({ ...e, id: `${id}:${e.id}` }));
        await writeJsonl(file, copies);
        specs.push({ path: file, id });
      }
    }
    console.log(
      `\nlarge corpus: the ${all.length.toLocaleString()} entries repeated ${args.repeat} times as corpora <id>#r<k> with ids <id>#r<k>:<original id>`,
    );
    await scale(
      `x${args.repeat}`,
      specs,
      queriesFile,
      { corpus: corpusTokens, queries: queryTokens, repeat: args.repeat },
      args,
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
