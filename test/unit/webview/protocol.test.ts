import * as assert from "node:assert/strict";
import type { AgentEvent, Trajectory } from "../../../extension/core/agent/types";
import type { SearchHit } from "../../../extension/core/retrieval/types";
import {
  type AgentEventMessage,
  appendCoalesced,
  checkAgentEvent,
  checkHostMessage,
  checkWebviewMessage,
  type HostMessage,
  MAX_COMMENT_LENGTH,
  parseHostMessage,
  parseWebviewMessage,
} from "../../../webview/protocol";

const hit: SearchHit = {
  id: "cedict:狗咬吕洞宾",
  headword: "狗咬吕洞宾",
  gloss: "to bite the hand that feeds you",
  score: 0.9731,
  lang: "zh",
  source: "cedict",
  match: "exact",
  tier: 0,
};

function trajectory(overrides: Partial<Trajectory> = {}): Trajectory {
  return {
    schema: "glossa.trajectory/1",
    request: {
      text: "狗咬吕洞宾",
      sourceLang: "zh",
      targetLang: "en",
      mode: "selective",
      style: "neoamt",
      limits: { maxTurns: 3, maxSearches: 3, maxOutputTokens: 2048, topk: 5 },
    },
    policyId: "openai:http://127.0.0.1:8000/v1#qwen",
    corpusIds: ["cedict"],
    raw: "<think>…</think><translation>x</translation>",
    steps: [],
    translation: "x",
    searches: 1,
    turns: 2,
    completionTokens: 40,
    promptTokens: 300,
    timings: { startedAt: "2025-01-01T00:00:00.000Z", firstEventMs: 12, totalMs: 1200, retrievalMs: 30 },
    warnings: [],
    ...overrides,
  };
}

const goodEvents: AgentEvent[] = [
  { type: "turn-start", turn: 1 },
  { type: "think-delta", text: "hmm" },
  { type: "search", query: "狗咬吕洞宾", index: 0 },
  { type: "evidence", query: "狗咬吕洞宾", index: 0, hits: [hit], information: "…", elapsedMs: 12.5 },
  { type: "evidence", query: "none", index: 1, hits: [], information: "", elapsedMs: 0 },
  {
    type: "evidence",
    query: "rat race",
    index: 2,
    hits: [
      {
        ...hit,
        match: "hybrid",
        tags: ["neologism", "internet-slang"],
        reasons: [
          { kind: "bm25", score: 7.5, rank: 2 },
          { kind: "dense", score: 0.81, rank: 1 },
        ],
      },
      { ...hit, id: "web:1", match: "online", online: true, tier: 3 },
    ],
    information: "…",
    elapsedMs: 40,
  },
  { type: "translation-delta", text: "Bite" },
  { type: "text-delta", text: "\n" },
  { type: "warning", code: "unclosed-think", message: "closed it" },
  { type: "done", trajectory: trajectory() },
  { type: "done", trajectory: trajectory({ translation: null }) },
  { type: "error", code: "truncated", message: "ran out", trajectory: trajectory({ translation: null }) },
];

function rejectsHost(x: unknown, reasonPart: RegExp): void {
  const r = checkHostMessage(x);
  assert.equal(r.ok, false, `expected rejection of ${JSON.stringify(x)}`);
  if (!r.ok) assert.match(r.reason, reasonPart);
}

function rejectsWebview(x: unknown, reasonPart: RegExp): void {
  const r = checkWebviewMessage(x);
  assert.equal(r.ok, false, `expected rejection of ${JSON.stringify(x)}`);
  if (!r.ok) assert.match(r.reason, reasonPart);
}

describe("webview protocol: host → webview", () => {
  it("accepts run-start", () => {
    const m = {
      type: "run-start",
      runId: "r1",
      source: "狗咬吕洞宾",
      sourceLang: "zh",
      targetLang: "en",
      mode: "selective",
      policyId: "p",
    };
    assert.deepEqual(parseHostMessage(m), m);
  });

  it("accepts every agent event variant and returns an equal value", () => {
    for (const event of goodEvents) {
      const m = { type: "agent-event", runId: "r1", event };
      const r = checkHostMessage(m);
      assert.ok(r.ok, r.ok ? "" : r.reason);
      assert.deepEqual(r.value, m);
    }
  });

  it("accepts decision-result with and without the decision kind", () => {
    assert.ok(parseHostMessage({ type: "decision-result", runId: "r1", ok: true, message: "Saved" }));
    assert.ok(parseHostMessage({ type: "decision-result", runId: "r1", ok: false, message: "x", decision: "rate" }));
  });

  it("drops unknown fields of events it rebuilds", () => {
    const r = checkHostMessage({
      type: "agent-event",
      runId: "r",
      event: { type: "think-delta", text: "a", extra: 1 },
    });
    assert.ok(r.ok);
    assert.deepEqual(r.value, { type: "agent-event", runId: "r", event: { type: "think-delta", text: "a" } });
  });

  it("rejects non-objects and unknown message types", () => {
    for (const x of [null, undefined, 3, "run-start", [], { type: "theme" }, {}]) {
      assert.equal(parseHostMessage(x), null);
    }
    rejectsHost({ type: "bogus" }, /unknown host message type "bogus"/);
  });

  it("rejects a missing or empty runId", () => {
    rejectsHost({ type: "agent-event", event: { type: "think-delta", text: "a" } }, /runId: expected a string/);
    rejectsHost(
      { type: "agent-event", runId: "", event: { type: "think-delta", text: "a" } },
      /runId: must not be empty/,
    );
    rejectsHost({ type: "decision-result", runId: 7, ok: true, message: "" }, /runId/);
  });

  it("rejects run-start with a bad mode or missing fields", () => {
    const base = { type: "run-start", runId: "r", source: "s", sourceLang: "zh", targetLang: "en", policyId: "p" };
    rejectsHost({ ...base, mode: "sometimes" }, /mode: expected one of selective, never, always/);
    rejectsHost({ ...base, mode: "never", source: undefined }, /source: expected a string, got undefined/);
  });

  it("rejects unknown agent event types", () => {
    rejectsHost(
      { type: "agent-event", runId: "r", event: { type: "html", html: "<b>" } },
      /unknown agent event type "html"/,
    );
    rejectsHost({ type: "agent-event", runId: "r" }, /event: expected an object, got undefined/);
  });

  it("rejects malformed agent events", () => {
    const bad: [unknown, RegExp][] = [
      [{ type: "think-delta", text: 5 }, /text: expected a string, got number/],
      [{ type: "turn-start", turn: 1.5 }, /turn: expected an integer/],
      [{ type: "search", query: "q", index: -1 }, /index: expected an integer ≥ 0/],
      [{ type: "evidence", query: "q", index: 0, hits: "x", information: "", elapsedMs: 1 }, /hits: expected an array/],
      [
        { type: "evidence", query: "q", index: 0, hits: [{ ...hit, score: "high" }], information: "", elapsedMs: 1 },
        /hits\[0\]\.score: expected a finite number/,
      ],
      [
        {
          type: "evidence",
          query: "q",
          index: 0,
          hits: [{ ...hit, score: Number.NaN }],
          information: "",
          elapsedMs: 1,
        },
        /score: expected a finite number/,
      ],
      [
        { type: "evidence", query: "q", index: 0, hits: [{ ...hit, match: "magic" }], information: "", elapsedMs: 1 },
        /match: expected one of/,
      ],
      [
        { type: "evidence", query: "q", index: 0, hits: [{ ...hit, tier: -1 }], information: "", elapsedMs: 1 },
        /tier: expected an integer ≥ 0/,
      ],
      [{ type: "evidence", query: "q", index: 0, hits: [], elapsedMs: 1 }, /information: expected a string/],
      [
        { type: "evidence", query: "q", index: 0, hits: [{ ...hit, tags: "idiom" }], information: "", elapsedMs: 1 },
        /hits\[0\]\.tags: expected an array/,
      ],
      [
        { type: "evidence", query: "q", index: 0, hits: [{ ...hit, tags: [3] }], information: "", elapsedMs: 1 },
        /hits\[0\]\.tags\[0\]: expected a string/,
      ],
      [
        { type: "evidence", query: "q", index: 0, hits: [{ ...hit, online: "yes" }], information: "", elapsedMs: 1 },
        /hits\[0\]\.online: expected a boolean/,
      ],
      [
        {
          type: "evidence",
          query: "q",
          index: 0,
          hits: [{ ...hit, reasons: [{ kind: "hybrid", score: 1 }] }],
          information: "",
          elapsedMs: 1,
        },
        /hits\[0\]\.reasons\[0\]\.kind: expected one of/,
      ],
      [
        {
          type: "evidence",
          query: "q",
          index: 0,
          hits: [{ ...hit, reasons: [{ kind: "dense", score: 0.5, rank: 0 }] }],
          information: "",
          elapsedMs: 1,
        },
        /hits\[0\]\.reasons\[0\]\.rank: expected an integer ≥ 1/,
      ],
      [{ type: "warning", code: "x" }, /message: expected a string/],
      [{ type: "done" }, /trajectory: expected an object/],
      [{ type: "done", trajectory: { ...trajectory(), schema: "other" } }, /schema/],
      [{ type: "done", trajectory: { ...trajectory(), raw: null } }, /raw: expected a string/],
      [{ type: "done", trajectory: { ...trajectory(), translation: 3 } }, /translation: expected a string/],
      [{ type: "done", trajectory: { ...trajectory(), timings: {} } }, /timings\.totalMs/],
      [{ type: "error", code: "exploded", message: "m", trajectory: trajectory() }, /code: expected one of/],
    ];
    for (const [event, reason] of bad) {
      const r = checkAgentEvent(event);
      assert.equal(r.ok, false, JSON.stringify(event));
      if (!r.ok) assert.match(r.reason, reason);
    }
  });

  it("passes the reason to the callback on rejection", () => {
    const reasons: string[] = [];
    assert.equal(
      parseHostMessage({ type: "decision-result", runId: "r", ok: "yes", message: "" }, (r) => reasons.push(r)),
      null,
    );
    assert.equal(reasons.length, 1);
    assert.match(reasons[0] ?? "", /ok: expected a boolean/);
  });
});

describe("webview protocol: webview → host", () => {
  it("accepts every message type", () => {
    const good = [
      { type: "ready" },
      { type: "accept", runId: "r", text: "Bite the hand" },
      { type: "edit-accept", runId: "r", text: "Bite the hand that feeds you" },
      { type: "reject", runId: "r" },
      { type: "rate", runId: "r", rating: 1, comment: "" },
      { type: "rate", runId: "r", rating: 5, comment: "x".repeat(MAX_COMMENT_LENGTH) },
      { type: "cancel", runId: "r" },
      { type: "log", level: "warn", message: "m" },
    ];
    for (const m of good) assert.deepEqual(parseWebviewMessage(m), m);
  });

  it("rejects out-of-range or non-integer ratings", () => {
    for (const rating of [0, 6, 2.5, -1, "3", null, Number.NaN, undefined]) {
      rejectsWebview({ type: "rate", runId: "r", rating, comment: "" }, /rating: expected an integer from 1 to 5/);
    }
  });

  it("rejects an oversized or missing comment", () => {
    rejectsWebview(
      { type: "rate", runId: "r", rating: 3, comment: "x".repeat(MAX_COMMENT_LENGTH + 1) },
      /comment: longer than 2000/,
    );
    rejectsWebview({ type: "rate", runId: "r", rating: 3 }, /comment: expected a string/);
  });

  it("rejects decisions without a runId and empty translations", () => {
    rejectsWebview({ type: "accept", text: "x" }, /runId: expected a string/);
    rejectsWebview({ type: "reject" }, /runId/);
    rejectsWebview({ type: "cancel", runId: "" }, /runId: must not be empty/);
    rejectsWebview({ type: "accept", runId: "r", text: "   " }, /text: must not be empty/);
    rejectsWebview({ type: "edit-accept", runId: "r", text: 42 }, /text: expected a string, got number/);
  });

  it("rejects unknown types and junk", () => {
    rejectsWebview({ type: "eval", code: "1" }, /unknown webview message type "eval"/);
    rejectsWebview({ type: "log", level: "info", message: "m" }, /level: expected one of warn, error/);
    for (const x of [null, "ready", 1, [], {}]) assert.equal(parseWebviewMessage(x), null);
  });
});

describe("webview protocol: coalescing", () => {
  const ev = (event: AgentEvent, runId = "r"): AgentEventMessage => ({ type: "agent-event", runId, event });

  it("merges adjacent deltas of the same type and never reorders", () => {
    const queue: HostMessage[] = [];
    const first = ev({ type: "think-delta", text: "a" });
    appendCoalesced(queue, first);
    appendCoalesced(queue, ev({ type: "think-delta", text: "b" }));
    appendCoalesced(queue, ev({ type: "search", query: "q", index: 0 }));
    appendCoalesced(queue, ev({ type: "think-delta", text: "c" }));
    appendCoalesced(queue, ev({ type: "translation-delta", text: "T" }));
    appendCoalesced(queue, ev({ type: "translation-delta", text: "U" }));
    appendCoalesced(queue, ev({ type: "text-delta", text: "x" }));
    appendCoalesced(queue, ev({ type: "translation-delta", text: "V" }));
    appendCoalesced(queue, ev({ type: "translation-delta", text: "W" }, "other-run"));
    assert.deepEqual(
      queue.map((m) => (m.type === "agent-event" ? m.event : m)),
      [
        { type: "think-delta", text: "ab" },
        { type: "search", query: "q", index: 0 },
        { type: "think-delta", text: "c" },
        { type: "translation-delta", text: "TU" },
        { type: "text-delta", text: "x" },
        { type: "translation-delta", text: "V" },
        { type: "translation-delta", text: "W" },
      ],
    );
    // The message first queued is left as it was (it may already have been posted).
    assert.deepEqual(first.event, { type: "think-delta", text: "a" });
  });
});
