/**
 * Throughput and latency of the retrieval server (POST /retrieve) over the demo glossary, on 127.0.0.1.
 *
 *   npx tsx bench/retrieval-server.ts [--requests 400] [--concurrency 8] [--topk 5] [--batches 1,32] [--index DIR]
 *
 * `--index DIR` serves a stored lexical index folder instead (the lexical benchmark leaves its ~425k-entry
 * index in .cache/bench-retrieval/index-base), with headwords drawn from that index.
 * Queries are real: headwords spread over the demo glossary, whole sentences from media/samples, and
 * English gloss words, cycled. Each batch size runs twice: with the result cache off (every query is
 * searched) and on (after a warm-up pass, every query is a cache hit). The load is bounded: a fixed
 * number of requests with a fixed number in flight, over keep-alive connections. The load generator runs in
 * the server's process and shares its event loop, so the figures are a lower bound for the server alone.
 */
import { readFile } from "node:fs/promises";
import http from "node:http";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { demoGlossaryPath, packageRoot } from "../extension/core/resources";
import { loadIndex } from "../extension/core/retrieval/corpora";
import { IndexStore } from "../extension/core/retrieval/indexStore";
import { RetrievalServer } from "../extension/core/retrieval/server";
import type { Retriever } from "../extension/core/retrieval/types";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "400" },
    concurrency: { type: "string", default: "8" },
    topk: { type: "string", default: "5" },
    batches: { type: "string", default: "1,32" },
    index: { type: "string" },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const TOPK = Number(values.topk);
const BATCHES = values.batches.split(",").map(Number);

async function realQueries(headwords: string[]): Promise<string[]> {
  const samples = (await readFile(join(packageRoot(), "media", "samples", "zh-en.txt"), "utf8"))
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("#"));
  const words = ["rat race", "lie flat", "competition", "idiom", "to give up", "chill", "involution", "slang"];
  return [...headwords, ...samples, ...words];
}

function post(agent: http.Agent, port: number, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: "/retrieve",
        method: "POST",
        agent,
        headers: { "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.on("end", () => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
          else resolve(Number(process.hrtime.bigint() - started) / 1e6);
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function run(retriever: Retriever, queries: string[], batch: number, cached: boolean): Promise<string> {
  const server = await RetrievalServer.start({
    retriever,
    port: 0,
    cacheEntries: cached ? 100_000 : 0,
    maxQueries: 1024,
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const bodies = Array.from({ length: REQUESTS }, (_, r) =>
    JSON.stringify({
      queries: Array.from({ length: batch }, (_, i) => queries[(r * batch + i) % queries.length]!),
      topk: TOPK,
      return_scores: true,
    }),
  );
  try {
    if (cached) for (const body of bodies) await post(agent, server.port, body);
    const latencies: number[] = [];
    let next = 0;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < bodies.length) latencies.push(await post(agent, server.port, bodies[next++]!));
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    latencies.sort((a, b) => a - b);
    return [
      `batch ${String(batch).padStart(2)}`,
      cached ? "cache hit " : "cache off ",
      `${(REQUESTS / seconds).toFixed(0).padStart(6)} req/s`,
      `${((REQUESTS * batch) / seconds).toFixed(0).padStart(7)} queries/s`,
      `p50 ${percentile(latencies, 50).toFixed(2).padStart(7)} ms`,
      `p95 ${percentile(latencies, 95).toFixed(2).padStart(7)} ms`,
    ].join("  ");
  } finally {
    agent.destroy();
    await server.close();
  }
}

/** 500 headwords spread evenly over the index. */
function spreadHeadwords(size: number, headwordOf: (doc: number) => string): string[] {
  return Array.from({ length: 500 }, (_, i) => headwordOf(Math.floor((i * size) / 500)));
}

async function main(): Promise<void> {
  const loadStarted = Date.now();
  let retriever: Retriever;
  let headwords: string[];
  let what: string;
  if (values.index) {
    const { index } = await new IndexStore(values.index).load();
    retriever = index;
    headwords = spreadHeadwords(index.size, (doc) => index.entry(doc).headword);
    what = `index ${values.index}: ${index.size} entries in ${index.corpusIds.length} corpora`;
  } else {
    const { index } = await loadIndex([{ path: demoGlossaryPath(), id: "demo-cc-cedict" }]);
    retriever = index;
    headwords = spreadHeadwords(index.size, (doc) => index.freeze().entry(doc).headword);
    what = `demo glossary: ${index.size} entries`;
  }
  const queries = await realQueries(headwords);
  console.log(
    `${what}, loaded in ${Date.now() - loadStarted} ms; ${queries.length} distinct queries; ` +
      `${REQUESTS} requests per run, ${CONCURRENCY} in flight, topk ${TOPK}, node ${process.version}`,
  );
  for (const batch of BATCHES) {
    for (const cached of [false, true]) console.log(await run(retriever, queries, batch, cached));
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
