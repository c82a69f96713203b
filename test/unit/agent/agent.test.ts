import assert from "node:assert/strict";
import { TranslationAgent } from "../../../extension/core/agent/agent";
import { type AgentEvent, DEFAULT_LIMITS, type TranslateRequest } from "../../../extension/core/agent/types";
import { OpenAIPolicy } from "../../../extension/core/policy/openai";
import { loadIndex } from "../../../extension/core/retrieval/corpora";
import type { LexicalIndex } from "../../../extension/core/retrieval/lexical";
import { OnlineSearchProvider, WithOnlineTier } from "../../../extension/core/retrieval/online";
import type { Retriever } from "../../../extension/core/retrieval/types";
import { deadPort } from "../../support/deadPort";
import { DEMO_GLOSSARY } from "../../support/paths";
import { type ScriptedCompletion, ScriptedOpenAIServer } from "../../support/scriptedServer";

const SOURCE = "你别狗咬吕洞宾，不识好人心，我是真心帮你的。";

function request(overrides: Partial<TranslateRequest> = {}): TranslateRequest {
  return {
    text: SOURCE,
    sourceLang: "zh",
    targetLang: "en",
    mode: "selective",
    style: "neoamt",
    limits: DEFAULT_LIMITS,
    ...overrides,
  };
}

const SEARCH_TURN: ScriptedCompletion = {
  when: { turn: 1 },
  text: "<think>狗咬吕洞宾 looks like an idiom; let me check it.</think>\n<search>狗咬吕洞宾</search>",
};
const ANSWER_TURN: ScriptedCompletion = {
  when: { turn: 2 },
  text: "<think>It means repaying kindness with ill will.</think>\n<translation>\nDon't bite the hand that's trying to help you — I really mean well.\n</translation>",
};

describe("agent loop against a scripted OpenAI-compatible server", () => {
  const server = new ScriptedOpenAIServer([]);
  let index: LexicalIndex;
  let url: string;

  before(async () => {
    url = await server.start();
    index = (await loadIndex([{ path: DEMO_GLOSSARY }])).index;
  });
  after(() => server.stop());
  beforeEach(() => {
    server.requests.length = 0;
  });

  function agent(options: { continuation?: "user-turn" | "continue"; endpoint?: string; retriever?: Retriever } = {}) {
    const policy = new OpenAIPolicy({
      endpoint: options.endpoint ?? url,
      model: "scripted",
      continuation: options.continuation,
    });
    return new TranslationAgent(policy, options.retriever ?? index);
  }

  async function run(
    scripts: ScriptedCompletion[],
    req = request(),
    opts: Parameters<typeof agent>[0] = {},
    signal?: AbortSignal,
  ) {
    server.setScripts(scripts);
    const events: AgentEvent[] = [];
    const trajectory = await agent(opts).run(req, (e) => events.push(e), signal);
    return { trajectory, events };
  }

  it("thinks, searches, reads the evidence and translates", async () => {
    const { trajectory, events } = await run([SEARCH_TURN, ANSWER_TURN]);
    assert.equal(trajectory.error, undefined);
    assert.equal(trajectory.translation, "Don't bite the hand that's trying to help you — I really mean well.");
    assert.equal(trajectory.searches, 1);
    assert.equal(trajectory.turns, 2);
    const evidence = events.find((e) => e.type === "evidence");
    assert.ok(evidence && evidence.type === "evidence");
    assert.equal(evidence.query, "狗咬吕洞宾");
    assert.equal(evidence.hits[0]?.headword, "狗咬吕洞宾，不识好人心");
    assert.match(evidence.hits[0]?.gloss ?? "", /ill reward a person's kindness/);
    // The events arrive in the order the panel shows them.
    const order = events.map((e) => e.type).filter((t, i, a) => t !== a[i - 1]);
    assert.deepEqual(order, [
      "turn-start",
      "think-delta",
      "search",
      "evidence",
      "turn-start",
      "think-delta",
      "translation-delta",
      "done",
    ]);
    // The stop string and the evidence block are written back into the raw text the trainer sees.
    assert.match(trajectory.raw, /<search>狗咬吕洞宾<\/search>\n\n<information>\[1\] 狗咬吕洞宾，不识好人心 — /);
    const info = trajectory.steps.find((s) => s.kind === "information");
    assert.ok(info && info.kind === "information" && info.hits.length > 0);
    // Second turn: the evidence went to the server as a user message after the assistant's text.
    const second = server.requests[1]?.body.messages ?? [];
    assert.equal(second.at(-1)?.role, "user");
    assert.match(second.at(-1)?.content ?? "", /^<information>\[1\]/);
    assert.equal(second.at(-2)?.role, "assistant");
    assert.ok(server.requests[0]?.body.stop?.includes("</search>"));
    // Exact counts come from the server's usage chunk, one per turn.
    const chunks = (text: string, stop: string) => Math.ceil([...text.slice(0, text.indexOf(stop))].length / 3);
    assert.equal(
      trajectory.completionTokens,
      chunks(SEARCH_TURN.text!, "</search>") + chunks(ANSWER_TURN.text!, "</translation>"),
    );
    assert.equal(trajectory.promptTokens, 200);
  });

  it("continues the assistant message in place with continue_final_message", async () => {
    const { trajectory } = await run([SEARCH_TURN, ANSWER_TURN], request(), { continuation: "continue" });
    assert.ok(trajectory.translation);
    const body = server.requests[1]?.body;
    assert.equal(body?.continue_final_message, true);
    assert.match(body?.messages?.at(-1)?.content ?? "", /<\/search>\n\n<information>[\s\S]*<\/information>\n\n$/);
  });

  it("translates without searching when the policy decides so", async () => {
    const { trajectory, events } = await run(
      [{ text: "<think>Plain.</think><translation>I am busy today.</translation>" }],
      request({ text: "我今天很忙。" }),
    );
    assert.equal(trajectory.translation, "I am busy today.");
    assert.equal(trajectory.searches, 0);
    assert.ok(!events.some((e) => e.type === "search"));
  });

  it("mode always retrieves with the source text before the first turn", async () => {
    const { trajectory, events } = await run(
      [{ text: "<translation>Don't bite the hand that feeds you.</translation>" }],
      request({ mode: "always" }),
    );
    assert.equal(trajectory.translation, "Don't bite the hand that feeds you.");
    assert.equal(events[0]?.type, "search");
    const prompt = server.requests[0]?.body.messages?.[0]?.content ?? "";
    assert.match(prompt, /Retrieved with the source text as the query[\s\S]*狗咬吕洞宾，不识好人心 — /);
  });

  it("mode never does not offer search, and refuses one the policy makes anyway", async () => {
    const { trajectory, events } = await run(
      [
        { when: { turn: 1 }, text: "<think>x</think><search>狗咬吕洞宾</search>" },
        { when: { turn: 2 }, text: "<translation>Don't be ungrateful.</translation>" },
      ],
      request({ mode: "never" }),
    );
    assert.ok(!server.requests[0]?.body.stop?.includes("</search>"));
    assert.equal(trajectory.translation, "Don't be ungrateful.");
    assert.equal(trajectory.searches, 0);
    assert.ok(events.some((e) => e.type === "warning" && e.code === "search-limit"));
  });

  it("shows a search's own warnings (a dead online tier) and still translates with the offline evidence", async () => {
    const online = new OnlineSearchProvider({ kind: "searxng", endpoint: `http://127.0.0.1:${await deadPort()}` });
    const retriever = new WithOnlineTier(index, online, { when: "always", onWarning: () => {} });
    const { trajectory, events } = await run([SEARCH_TURN, ANSWER_TURN], request(), { retriever });
    assert.equal(trajectory.error, undefined);
    assert.match(trajectory.translation ?? "", /Don't bite the hand/);
    const evidence = events.find((e) => e.type === "evidence");
    assert.ok(evidence?.type === "evidence" && evidence.hits[0]?.headword === "狗咬吕洞宾，不识好人心");
    const warning = events.find((e) => e.type === "warning");
    assert.ok(warning?.type === "warning");
    assert.equal(warning.code, "retrieval");
    assert.match(warning.message, /^online search: Online search .* failed: ECONNREFUSED/);
    // The panel shows it before the evidence of the search that met it, and the feedback record keeps it.
    assert.ok(events.indexOf(warning) < events.indexOf(evidence));
    assert.ok(trajectory.warnings.some((w) => w.startsWith("retrieval: online search:")));
  });

  it("SRAT style: tool_call and answer", async () => {
    const { trajectory } = await run(
      [
        {
          when: { turn: 1 },
          text: '<think>idiom?</think><tool_call>{"name": "search", "arguments": {"query": "狗咬吕洞宾"}}</tool_call>',
        },
        { when: { turn: 2 }, text: "<answer>Don't mistake my kindness for malice.</answer>" },
      ],
      request({ style: "srat" }),
    );
    assert.equal(trajectory.translation, "Don't mistake my kindness for malice.");
    assert.ok(server.requests[0]?.body.stop?.includes("</tool_call>"));
    assert.match(trajectory.raw, /<\/tool_call>\n\n<information>/);
  });

  it("closes a search the server ended without a stop reason (OpenAI, llama.cpp)", async () => {
    const { trajectory } = await run([{ ...SEARCH_TURN, noStopReason: true }, ANSWER_TURN]);
    assert.equal(trajectory.searches, 1);
    assert.ok(trajectory.translation);
  });

  describe("malformed output ends with a typed error, never a silent insert", () => {
    it("no translation tag", async () => {
      const { trajectory, events } = await run([{ text: "<think>hmm</think>Sure! Here it is: Don't bite." }]);
      assert.equal(trajectory.translation, null);
      assert.equal(trajectory.error?.code, "missing-translation");
      assert.equal(events.at(-1)?.type, "error");
      assert.match(trajectory.raw, /Here it is/, "the raw output is kept");
    });

    it("an unclosed translation at the end of the stream is taken, with a warning", async () => {
      const { trajectory } = await run([{ text: "<think>ok</think><translation>Be grateful.", noStopReason: true }]);
      assert.equal(trajectory.translation, "Be grateful.");
      assert.ok(trajectory.warnings.some((w) => w.startsWith("unclosed-translation")));
    });

    it("an unclosed think when the token limit hits is 'truncated'", async () => {
      const { trajectory } = await run([
        { text: `<think>${"long reasoning ".repeat(50)}</think>`, lengthAfterChunks: 10 },
      ]);
      assert.equal(trajectory.error?.code, "truncated");
    });

    it("a translation cut by the token limit is 'truncated', not inserted half", async () => {
      const { trajectory } = await run([
        { text: "<translation>Don't bite the hand that is trying to help</translation>", lengthAfterChunks: 8 },
      ]);
      assert.equal(trajectory.error?.code, "truncated");
      assert.equal(trajectory.translation, null);
    });

    it("an empty answer", async () => {
      const { trajectory } = await run([{ text: "<think>x</think><translation>  \n </translation>" }]);
      assert.equal(trajectory.error?.code, "empty-translation");
    });

    it("searching past the limit: one refusal, then an error", async () => {
      const search = (turn: number): ScriptedCompletion => ({ when: { turn }, text: `<search>q${turn}</search>` });
      const { trajectory, events } = await run(
        [search(1), search(2), search(3)],
        request({ limits: { ...DEFAULT_LIMITS, maxSearches: 1, maxTurns: 3 } }),
      );
      assert.equal(trajectory.searches, 1);
      assert.ok(events.some((e) => e.type === "warning" && e.code === "search-limit"));
      assert.equal(trajectory.error?.code, "search-limit");
      assert.match(trajectory.raw, /Search limit reached/);
    });

    it("a tool call naming an unknown tool", async () => {
      const { trajectory } = await run(
        [{ text: '<tool_call>{"name":"calc","arguments":{}}</tool_call>' }],
        request({ style: "srat" }),
      );
      assert.equal(trajectory.error?.code, "malformed-tool-call");
    });

    it("an HTTP error from the server", async () => {
      const { trajectory } = await run([{ fail: "http-500" }]);
      assert.equal(trajectory.error?.code, "policy");
      assert.match(trajectory.error?.message ?? "", /HTTP 500: scripted server error/);
    });

    it("a bad API key", async () => {
      const { trajectory } = await run([{ fail: "http-401" }]);
      assert.match(trajectory.error?.message ?? "", /HTTP 401: Invalid API key/);
    });

    it("a connection cut mid-stream", async () => {
      const { trajectory } = await run([{ ...ANSWER_TURN, when: undefined, fail: "cut" }]);
      assert.equal(trajectory.error?.code, "policy");
      assert.equal(trajectory.translation, null);
    });

    it("a chunk that is not JSON", async () => {
      const { trajectory } = await run([{ ...ANSWER_TURN, when: undefined, fail: "malformed-json" }]);
      assert.match(trajectory.error?.message ?? "", /not JSON/);
    });

    it("an error event mid-stream", async () => {
      const { trajectory } = await run([{ ...ANSWER_TURN, when: undefined, fail: "error-event" }]);
      assert.match(trajectory.error?.message ?? "", /scripted mid-stream failure/);
    });

    it("a stream that ends without finish reason or [DONE]", async () => {
      const { trajectory } = await run([{ text: "<think>x", fail: "no-done" }]);
      assert.match(trajectory.error?.message ?? "", /ended without a finish reason/);
    });

    it("a dead endpoint", async () => {
      const dead = new ScriptedOpenAIServer([]);
      const deadUrl = await dead.start();
      await dead.stop();
      const events: AgentEvent[] = [];
      const trajectory = await agent({ endpoint: deadUrl }).run(request(), (e) => events.push(e));
      assert.equal(trajectory.error?.code, "policy");
      assert.match(trajectory.error?.message ?? "", /Cannot reach the policy endpoint .* \(ECONNREFUSED\)/);
    });
  });

  it("cancellation aborts the HTTP request and ends with 'cancelled'", async () => {
    const controller = new AbortController();
    server.setScripts([{ text: `<think>${"slow ".repeat(200)}</think>`, delayMs: 10, chunkSize: 2 }]);
    const events: AgentEvent[] = [];
    const running = agent().run(
      request(),
      (e) => {
        events.push(e);
        if (e.type === "think-delta" && events.length === 5) controller.abort();
      },
      controller.signal,
    );
    const trajectory = await running;
    assert.equal(trajectory.error?.code, "cancelled");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(server.requests[0]?.aborted, true, "the server saw the connection close");
  });
});
