import { parseArgs } from "node:util";
import { demoGlossaryPath } from "../core/resources";
import { type CorpusSpec, loadIndex } from "../core/retrieval/corpora";
import { RetrievalEngine } from "../core/retrieval/engine";
import { HierarchicalRetriever } from "../core/retrieval/hierarchy";
import { summarize } from "../core/retrieval/importers/report";
import { IndexCorruptError } from "../core/retrieval/indexStore";
import { isLoopback, RetrievalServer } from "../core/retrieval/server";
import type { Retriever } from "../core/retrieval/types";

export const SERVE_RETRIEVER_USAGE = `glossa serve-retriever — the retrieval server for training rollouts (POST /retrieve, GET /health)

  glossa serve-retriever [--glossary F ...] [--no-demo-glossary] [--from LANG --to LANG]
                         [--port 8765] [--host 127.0.0.1] [--allow-remote]
                         [--topk-max 50] [--topk-default 5] [--max-queries 512] [--cache-entries 10000]
                         [--languages zh,ja,ko,en] [--anchor en] [--index DIR [--encoder DIR] [--rebuild]]

  --glossary F        a corpus to serve (repeatable): CC-CEDICT (.u8), TSV/CSV, or Glossa entry JSONL
  --from/--to         languages of TSV/CSV glossaries whose header does not name them (default zh/en)
  --index DIR         serve from an index folder (imported once, reused; the extension's
                      glossa.retrieval.indexFolder) instead of loading the corpora into memory
  --encoder DIR       with --index: fuse dense search from this ONNX sentence encoder (hybrid)
  --rebuild           with --index: rebuild the lexical index from the corpora first (for one that
                      cannot be used)
  --host              bind address; anything but loopback also needs --allow-remote
  --languages L,...   search the LcRL hierarchy over these corpus languages: the query's language first,
                      then the others in this order, then the anchor (--anchor, default en)`;

/** Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), 2 for a usage or setup problem. */
export async function serveRetrieverCommand(argv: string[]): Promise<number> {
  let flags: ReturnType<typeof parse>["values"];
  try {
    flags = parse(argv).values;
  } catch (e) {
    return usage((e as Error).message);
  }
  if (flags.help) {
    process.stdout.write(`${SERVE_RETRIEVER_USAGE}\n`);
    return 0;
  }
  const numbers: Record<string, number | undefined> = {};
  for (const [flag, min, max] of [
    ["port", 0, 65_535],
    ["topk-max", 1, 10_000],
    ["topk-default", 1, 10_000],
    ["max-queries", 1, 1_000_000],
    ["cache-entries", 0, 100_000_000],
  ] as const) {
    const raw = flags[flag];
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      return usage(`--${flag} must be an integer from ${min} to ${max}, not "${raw}"`);
    }
    numbers[flag] = value;
  }
  const host = flags.host ?? "127.0.0.1";
  if (!isLoopback(host) && !flags["allow-remote"]) {
    return usage(`--host ${host} is not a loopback address; add --allow-remote to expose the corpora on it`);
  }

  const specs: CorpusSpec[] = (flags.glossary ?? []).map((path) => ({
    path,
    sourceLang: flags.from ?? "zh",
    targetLang: flags.to ?? "en",
  }));
  if (!flags["no-demo-glossary"]) specs.unshift({ path: demoGlossaryPath(), id: "demo-cc-cedict" });
  if (specs.length === 0) return usage("nothing to serve: give --glossary F or drop --no-demo-glossary");

  const languages = (flags.languages ?? "")
    .split(",")
    .map((l) => l.trim())
    .filter(Boolean);
  const hierarchy = languages.length ? { languages, anchors: [flags.anchor ?? "en"] } : undefined;
  let retriever: Retriever;
  try {
    const started = Date.now();
    if (flags.index) {
      // The index folder the extension uses (glossa.retrieval.indexFolder): same files, same engine.
      const config = {
        indexDir: flags.index,
        corpora: specs,
        ...(flags.encoder ? { dense: { encoder: { modelPath: flags.encoder } } } : {}),
        ...(hierarchy ? { hierarchy } : {}),
      };
      const hooks = {
        onProgress: (m: string) => process.stderr.write(`${m}\n`),
        onWarning: (m: string) => process.stderr.write(`warning: ${m}\n`),
      };
      let engine: RetrievalEngine;
      try {
        engine = await (flags.rebuild ? RetrievalEngine.rebuild(config, hooks) : RetrievalEngine.open(config, hooks));
      } catch (e) {
        if (e instanceof IndexCorruptError) {
          process.stderr.write(`glossa: ${e.message} Run again with --rebuild to rebuild it.\n`);
          return 2;
        }
        throw e;
      }
      for (const report of engine.update.reports) process.stderr.write(`${summarize(report)}\n`);
      if (engine.dense.kind === "needs-build") {
        process.stderr.write("building the dense index (this can take long; it resumes if interrupted)\n");
        await engine.buildDense({ onProgress: (p) => process.stderr.write(`  ${p.done}/${p.total}\r`) });
        retriever = await RetrievalEngine.open({
          indexDir: flags.index,
          corpora: specs,
          dense: { encoder: { modelPath: flags.encoder! } },
          ...(hierarchy ? { hierarchy } : {}),
        });
      } else retriever = engine;
      process.stderr.write(
        `index ${flags.index}: ${engine.lexical.size} entries ready in ${Date.now() - started} ms\n`,
      );
    } else {
      const { index, reports } = await loadIndex(specs);
      for (const report of reports) process.stderr.write(`${summarize(report)}\n`);
      process.stderr.write(`loaded ${index.size} entries in ${Date.now() - started} ms\n`);
      retriever = hierarchy ? new HierarchicalRetriever(index, hierarchy) : index;
    }
  } catch (e) {
    process.stderr.write(`glossa: cannot load the corpora: ${(e as Error).message}\n`);
    return 2;
  }

  let server: RetrievalServer;
  try {
    server = await RetrievalServer.start({
      retriever,
      host,
      port: numbers.port ?? 8765,
      allowNonLoopback: flags["allow-remote"],
      topkMax: numbers["topk-max"],
      topkDefault: numbers["topk-default"],
      maxQueries: numbers["max-queries"],
      cacheEntries: numbers["cache-entries"],
    });
  } catch (e) {
    process.stderr.write(`glossa: cannot start the retrieval server: ${(e as Error).message}\n`);
    return 2;
  }
  process.stdout.write(`glossa retrieval server listening on ${server.url} (POST ${server.url}/retrieve)\n`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const stop = (received: NodeJS.Signals) => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve(received);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  process.stderr.write(`${signal}: shutting down\n`);
  await server.close();
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: false,
    options: {
      glossary: { type: "string", multiple: true },
      "no-demo-glossary": { type: "boolean" },
      from: { type: "string" },
      to: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      "allow-remote": { type: "boolean" },
      "topk-max": { type: "string" },
      "topk-default": { type: "string" },
      "max-queries": { type: "string" },
      "cache-entries": { type: "string" },
      languages: { type: "string" },
      anchor: { type: "string" },
      index: { type: "string" },
      encoder: { type: "string" },
      rebuild: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function usage(message: string): number {
  process.stderr.write(`glossa: ${message}\n${SERVE_RETRIEVER_USAGE}\n`);
  return 2;
}
