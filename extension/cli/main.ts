import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { TranslationAgent } from "../core/agent/agent";
import type { AgentEvent, PromptStyle, RetrievalMode } from "../core/agent/types";
import { createPolicy } from "../core/policy/factory";
import { PolicyError } from "../core/policy/types";
import { demoGlossaryPath, packageRoot } from "../core/resources";
import { loadIndex, writeEntriesJsonl } from "../core/retrieval/corpora";
import { summarize } from "../core/retrieval/importers/report";
import { corpusSpecs, DEFAULT_SETTINGS, type GlossaSettings } from "../core/settings";
import { SERVE_RETRIEVER_USAGE, serveRetrieverCommand } from "./serveRetriever";

const USAGE = `glossa — agentic translation from the command line

  glossa translate [TEXT ...] [--file F | --samples] [options]
  glossa import FILE --out CORPUS.jsonl [--format cedict|tsv|csv|jsonl] [--from LANG --to LANG]
  glossa search QUERY [--glossary F ...] [--topk N] [--json]
  glossa serve-retriever [options]      (see below)

translate options:
  --from LANG --to LANG          language pair (default zh → en)
  --backend embedded|openai      policy backend (default embedded)
  --model-path DIR               local ONNX model folder for the embedded backend (env GLOSSA_MODEL_PATH)
  --model-id ID                  hub model id downloaded on first use (default ${DEFAULT_SETTINGS.modelId})
  --endpoint URL --model NAME    OpenAI-compatible server (env GLOSSA_ENDPOINT, GLOSSA_MODEL, GLOSSA_API_KEY)
  --mode selective|always|never  when to retrieve (default selective)
  --style neoamt|srat            prompt and tag style (default neoamt)
  --glossary F                   add a glossary (repeatable); --no-demo-glossary drops the bundled one
  --steps                        print reasoning, searches and evidence as they stream
  --json                         one JSON trajectory per line on stdout

${SERVE_RETRIEVER_USAGE}`;

type Flags = ReturnType<typeof parse>["values"];

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: "string" },
      samples: { type: "boolean" },
      from: { type: "string" },
      to: { type: "string" },
      backend: { type: "string" },
      "model-path": { type: "string" },
      "model-id": { type: "string" },
      "hub-url": { type: "string" },
      dtype: { type: "string" },
      endpoint: { type: "string" },
      model: { type: "string" },
      continuation: { type: "string" },
      mode: { type: "string" },
      style: { type: "string" },
      glossary: { type: "string", multiple: true },
      "no-demo-glossary": { type: "boolean" },
      out: { type: "string" },
      format: { type: "string" },
      topk: { type: "string" },
      steps: { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

/** CLI exit codes: 0 ok, 1 some translations failed, 2 usage or setup problem. */
class UsageError extends Error {}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], fallback: T, flag: string): T {
  if (value === undefined) return fallback;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(", ")}, not "${value}"`);
}

function settingsFrom(flags: Flags): GlossaSettings {
  const env = process.env;
  const endpoint = flags.endpoint ?? env.GLOSSA_ENDPOINT;
  return {
    ...DEFAULT_SETTINGS,
    sourceLang: flags.from ?? DEFAULT_SETTINGS.sourceLang,
    targetLang: flags.to ?? DEFAULT_SETTINGS.targetLang,
    backend: oneOf(flags.backend, ["embedded", "openai"] as const, endpoint ? "openai" : "embedded", "--backend"),
    endpoint: endpoint ?? DEFAULT_SETTINGS.endpoint,
    model: flags.model ?? env.GLOSSA_MODEL ?? DEFAULT_SETTINGS.model,
    continuation: oneOf(flags.continuation, ["user-turn", "continue"] as const, "user-turn", "--continuation"),
    modelPath: flags["model-path"] ?? env.GLOSSA_MODEL_PATH ?? "",
    modelId: flags["model-id"] ?? DEFAULT_SETTINGS.modelId,
    hubUrl: flags["hub-url"] ?? env.GLOSSA_HUB_URL ?? DEFAULT_SETTINGS.hubUrl,
    dtype: flags.dtype ?? DEFAULT_SETTINGS.dtype,
    mode: oneOf<RetrievalMode>(flags.mode, ["selective", "always", "never"], "selective", "--mode"),
    style: oneOf<PromptStyle>(flags.style, ["neoamt", "srat"], "neoamt", "--style"),
    glossaries: flags.glossary ?? [],
    includeDemoGlossary: !flags["no-demo-glossary"],
  };
}

async function sourceTexts(flags: Flags, positionals: string[]): Promise<string[]> {
  if (flags.samples) {
    const text = await readFile(join(packageRoot(), "media", "samples", "zh-en.txt"), "utf8");
    return text.split("\n").filter((l) => l.trim() && !l.startsWith("#"));
  }
  if (flags.file) return (await readFile(flags.file, "utf8")).split("\n").filter((l) => l.trim());
  if (positionals.length) return [positionals.join(" ")];
  throw new UsageError("nothing to translate: give TEXT, --file F or --samples");
}

async function translate(flags: Flags, positionals: string[]): Promise<number> {
  const settings = settingsFrom(flags);
  const texts = await sourceTexts(flags, positionals);
  const policy = await createPolicy(settings, {
    modelStorage: join(process.env.GLOSSA_HOME ?? join(homedir(), ".cache", "glossa"), "models"),
    apiKey: process.env.GLOSSA_API_KEY,
    hint: "set GLOSSA_MODEL_PATH=/path/to/onnx-model-folder, or GLOSSA_ENDPOINT=http://host:port/v1 for an OpenAI-compatible server",
    onProgress: (message) => process.stderr.write(`${message}\n`),
  });
  const { index, reports } = await loadIndex(corpusSpecs(settings, demoGlossaryPath()));
  for (const report of reports) if (report.malformed) process.stderr.write(`${summarize(report)}\n`);
  const agent = new TranslationAgent(policy, index);
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  let failures = 0;
  try {
    for (const text of texts) {
      const onEvent = flags.steps ? printStep : () => {};
      const trajectory = await agent.run(
        {
          text,
          sourceLang: settings.sourceLang,
          targetLang: settings.targetLang,
          mode: settings.mode,
          style: settings.style,
          limits: settings.limits,
        },
        onEvent,
        controller.signal,
      );
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(trajectory)}\n`);
      } else {
        const queries = trajectory.steps.flatMap((s) => (s.kind === "search" ? [s.query] : []));
        const how = queries.length ? `searched: ${queries.join(" | ")}` : "no search";
        process.stdout.write(
          `${text}\n  → ${trajectory.translation ?? `[${trajectory.error?.code}] ${trajectory.error?.message}`}\n    (${how}; ${trajectory.turns} turn(s), ${trajectory.completionTokens} tokens, ${trajectory.timings.totalMs} ms)\n`,
        );
      }
      if (trajectory.error) failures++;
      if (trajectory.error?.code === "cancelled") break;
      if (trajectory.error?.code === "policy" && failures === 1 && texts.length > 1 && trajectory.turns <= 1) {
        // The backend itself is failing (dead endpoint, broken model): the rest would fail the same way.
        process.stderr.write(`glossa: stopping: ${trajectory.error.message}\n`);
        return 1;
      }
    }
  } finally {
    await policy.dispose?.();
  }
  return failures ? 1 : 0;
}

function printStep(event: AgentEvent): void {
  const out = process.stderr;
  switch (event.type) {
    case "think-delta":
      out.write(event.text);
      break;
    case "search":
      out.write(`\n  [search] ${event.query}\n`);
      break;
    case "evidence":
      for (const hit of event.hits)
        out.write(
          `    ${hit.headword} — ${hit.gloss.slice(0, 100)} (${hit.source}, ${hit.match} ${hit.score.toFixed(2)})\n`,
        );
      if (event.hits.length === 0) out.write("    (no results)\n");
      break;
    case "warning":
      out.write(`\n  [warning] ${event.message}\n`);
      break;
    case "done":
    case "error":
      out.write("\n");
      break;
    default:
      break;
  }
}

async function importCommand(flags: Flags, positionals: string[]): Promise<number> {
  const [file] = positionals;
  if (!file || !flags.out) throw new UsageError("usage: glossa import FILE --out CORPUS.jsonl");
  const format = flags.format
    ? oneOf(flags.format, ["cedict", "tsv", "csv", "jsonl"] as const, "tsv", "--format")
    : undefined;
  const report = await writeEntriesJsonl(
    { path: file, format, sourceLang: flags.from, targetLang: flags.to },
    flags.out,
  );
  process.stdout.write(`${summarize(report)}\n→ ${flags.out}\n`);
  return 0;
}

async function searchCommand(flags: Flags, positionals: string[]): Promise<number> {
  const query = positionals.join(" ");
  if (!query) throw new UsageError("usage: glossa search QUERY [--glossary F ...]");
  const settings = settingsFrom(flags);
  const { index } = await loadIndex(corpusSpecs(settings, demoGlossaryPath()));
  const topk = Number(flags.topk ?? 5);
  if (!Number.isInteger(topk) || topk < 1) throw new UsageError("--topk must be a positive integer");
  const hits = await index.search(query, { topk });
  if (flags.json) process.stdout.write(`${JSON.stringify(hits)}\n`);
  else
    for (const h of hits)
      process.stdout.write(`${h.headword}\t${h.gloss}\t${h.source}\t${h.match}\t${h.score.toFixed(3)}\n`);
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // The server has its own options; it parses them itself.
  if (command === "serve-retriever") return serveRetrieverCommand(rest);
  try {
    const { values, positionals } = parse(rest);
    if (!command || values.help || command === "help") {
      process.stdout.write(`${USAGE}\n`);
      return command ? 0 : 2;
    }
    switch (command) {
      case "translate":
        return await translate(values, positionals);
      case "import":
        return await importCommand(values, positionals);
      case "search":
        return await searchCommand(values, positionals);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e instanceof TypeError && "code" in e)) {
      process.stderr.write(`glossa: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    if (e instanceof PolicyError) {
      process.stderr.write(`glossa: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`glossa: ${(e as Error).message}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
