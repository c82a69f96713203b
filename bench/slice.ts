/**
 * Benchmarks of the vertical slice; prints its figures (no pass/fail thresholds: machines are shared and noisy).
 *
 *   npm run bench:slice            (after `node scripts/build.mjs`)
 *
 * 1. Per-token overhead of the agent loop: an in-process policy that yields pre-made tokens at no
 *    cost, so the time measured is the loop's own (parsing, events, bookkeeping), per token.
 * 2. The same through the OpenAI-compatible client against the scripted server on 127.0.0.1
 *    (adds HTTP, SSE parsing and JSON decoding per token).
 * 3. Time from starting a translation to the first step event, with the scripted server.
 * 4. In a real VS Code (code-server): activation time of the extension (from its own log) and time
 *    from the palette command to the first step shown in the panel, read from the end-to-end run
 *    when GLOSSA_BENCH_E2E=1 (it needs the e2e setup; see scripts/test.sh).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { TranslationAgent } from "../extension/core/agent/agent";
import { DEFAULT_LIMITS, type TranslateRequest } from "../extension/core/agent/types";
import { OpenAIPolicy } from "../extension/core/policy/openai";
import type { GenerateDelta, GenerateRequest, GenerateSummary, PolicyBackend } from "../extension/core/policy/types";
import { demoGlossaryPath } from "../extension/core/resources";
import { loadIndex } from "../extension/core/retrieval/corpora";
import { ScriptedOpenAIServer } from "../test/support/scriptedServer";

const ROOT = resolve(__dirname, "..");
const THINK =
  "The sentence contains an idiom about a dog biting Lü Dongbin; a literal rendering would confuse readers. ".repeat(8);
const TURN1 = `<think>${THINK}</think>\n<search>狗咬吕洞宾</search>`;
const TURN2 = `<think>${THINK}</think>\n<translation>\nDon't bite the hand that's trying to help you; I really mean well.\n</translation>`;

/** Splits text into tokens of about 3 characters, as a tokenizer would. */
function tokens(text: string): string[] {
  const chars = [...text];
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += 3) out.push(chars.slice(i, i + 3).join(""));
  return out;
}

class InstantPolicy implements PolicyBackend {
  readonly id = "bench:instant";
  async *stream(request: GenerateRequest): AsyncGenerator<GenerateDelta, GenerateSummary, void> {
    const full = request.assistantPrefix ? TURN2 : TURN1;
    const stopString = request.stop.find((s) => full.includes(s));
    const pieces = tokens(stopString ? full.slice(0, full.indexOf(stopString)) : full);
    for (const piece of pieces) yield { text: piece, tokens: 1 };
    return { finishReason: "stop", stopString, completionTokens: pieces.length };
  }
}

const request: TranslateRequest = {
  text: "你别狗咬吕洞宾，不识好人心，我是真心帮你的。",
  sourceLang: "zh",
  targetLang: "en",
  mode: "selective",
  style: "neoamt",
  limits: DEFAULT_LIMITS,
};

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function timeRuns(agent: TranslationAgent, runs: number) {
  const perToken: number[] = [];
  const firstEvent: number[] = [];
  let tokenCount = 0;
  for (let i = 0; i < runs; i++) {
    let first = -1;
    const started = process.hrtime.bigint();
    const trajectory = await agent.run(request, (event) => {
      if (first < 0 && event.type !== "turn-start") first = Number(process.hrtime.bigint() - started) / 1e6;
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (!trajectory.translation) throw new Error(`benchmark run failed: ${trajectory.error?.message}`);
    tokenCount = tokens(TURN1).length + tokens(TURN2).length;
    perToken.push(((ms - trajectory.timings.retrievalMs) * 1000) / tokenCount);
    firstEvent.push(first);
  }
  perToken.sort((a, b) => a - b);
  firstEvent.sort((a, b) => a - b);
  return { tokenCount, perToken, firstEvent };
}

async function main(): Promise<void> {
  const { index } = await loadIndex([{ path: demoGlossaryPath(), id: "demo-cc-cedict" }]);
  console.log("Glossa vertical-slice benchmark");
  console.log(`node ${process.version}, ${new Date().toISOString()}`);

  const instant = new TranslationAgent(new InstantPolicy(), index);
  await timeRuns(instant, 20); // warm-up
  const a = await timeRuns(instant, 200);
  console.log(
    `agent loop overhead (in-process policy, ${a.tokenCount} tokens/run, 200 runs): per token p50 ${quantile(a.perToken, 0.5).toFixed(2)} µs, p95 ${quantile(a.perToken, 0.95).toFixed(2)} µs`,
  );

  const server = new ScriptedOpenAIServer([
    { when: { turn: 1 }, text: TURN1, repeat: true },
    { when: { turn: 2 }, text: TURN2, repeat: true },
  ]);
  const url = await server.start();
  const http = new TranslationAgent(new OpenAIPolicy({ endpoint: url, model: "scripted" }), index);
  await timeRuns(http, 5);
  const b = await timeRuns(http, 50);
  await server.stop();
  console.log(
    `agent loop + OpenAI client over HTTP (scripted server on 127.0.0.1, 50 runs): per token p50 ${quantile(b.perToken, 0.5).toFixed(1)} µs, p95 ${quantile(b.perToken, 0.95).toFixed(1)} µs`,
  );
  console.log(
    `start of a translation → first step event (scripted server): p50 ${quantile(b.firstEvent, 0.5).toFixed(2)} ms, p95 ${quantile(b.firstEvent, 0.95).toFixed(2)} ms`,
  );

  if (process.env.GLOSSA_BENCH_E2E === "1") {
    execFileSync(process.execPath, [join(ROOT, "dist", "e2e.js")], { stdio: "inherit" });
  }
  const timings = join(ROOT, "test-results", "e2e-timings.json");
  if (existsSync(timings)) {
    const t = JSON.parse(readFileSync(timings, "utf8")) as Record<string, number>;
    console.log(
      `real VS Code (code-server 4.100.3, last e2e run): activation ${t.activationMs ?? "?"} ms; first translation (glossary index rebuilt, panel created): "Rebuild index" chosen → first step in the panel ${t.commandToFirstStepMs} ms, → full translation shown ${t.commandToTranslationMs} ms; second translation: keybinding → first step ${t.warmCommandToFirstStepMs} ms`,
    );
  } else {
    console.log("real VS Code figures: run with GLOSSA_BENCH_E2E=1 (needs the e2e setup from scripts/test.sh)");
  }
}

void main();
