/**
 * The message protocol between the extension host and the translation panel (webview).
 *
 * Both sides validate every message they receive with the guards below: a webview is a separate
 * process whose messages are untrusted input, and the host must never act on a malformed decision.
 * The validators are hand-written so the same file can be bundled for the browser without extra code.
 */
import type { AgentErrorCode, AgentEvent, RetrievalMode, Trajectory } from "../extension/core/agent/types";
import type { MatchKind, MatchReason, SearchHit } from "../extension/core/retrieval/types";

/** Longest optional rating comment, in UTF-16 code units (what a textarea's maxlength counts). */
export const MAX_COMMENT_LENGTH = 2000;
/** Longest translation text the panel may send back. */
export const MAX_TEXT_LENGTH = 1_000_000;
/** Longest run id. */
export const MAX_RUN_ID_LENGTH = 200;
/** Longest diagnostic line the webview may send to the host log. */
export const MAX_LOG_LENGTH = 2000;

/** What the panel shows about a run before any event arrives. */
export interface RunInfo {
  runId: string;
  source: string;
  sourceLang: string;
  targetLang: string;
  mode: RetrievalMode;
  policyId: string;
}

/** Which decision a `decision-result` answers. */
export type DecisionKind = "accept" | "edit" | "reject" | "rate";

// ---------------------------------------------------------------------------------------------
// host → webview

export type RunStartMessage = { type: "run-start" } & RunInfo;

export interface AgentEventMessage {
  type: "agent-event";
  runId: string;
  event: AgentEvent;
}

export interface DecisionResultMessage {
  type: "decision-result";
  runId: string;
  ok: boolean;
  message: string;
  /** The decision this answers, when the host knows it (it does whenever the decision came from this panel). */
  decision?: DecisionKind;
}

export type HostMessage = RunStartMessage | AgentEventMessage | DecisionResultMessage;

// ---------------------------------------------------------------------------------------------
// webview → host

export type WebviewMessage =
  | { type: "ready" }
  | { type: "accept"; runId: string; text: string }
  | { type: "edit-accept"; runId: string; text: string }
  | { type: "reject"; runId: string }
  | { type: "rate"; runId: string; rating: number; comment: string }
  | { type: "cancel"; runId: string }
  /** A problem the webview noticed (e.g. a host message it rejected); the host writes it to its log. */
  | { type: "log"; level: "warn" | "error"; message: string };

// ---------------------------------------------------------------------------------------------
// results

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

const fail = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

class Invalid extends Error {}

type Obj = Record<string, unknown>;

function isObject(x: unknown): x is Obj {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "array";
  return typeof x;
}

function obj(x: unknown, where: string): Obj {
  if (!isObject(x)) throw new Invalid(`${where}: expected an object, got ${describe(x)}`);
  return x;
}

function str(o: Obj, key: string, where: string, maxLength = Number.POSITIVE_INFINITY): string {
  const v = o[key];
  if (typeof v !== "string") throw new Invalid(`${where}.${key}: expected a string, got ${describe(v)}`);
  if (v.length > maxLength) throw new Invalid(`${where}.${key}: longer than ${maxLength} characters (${v.length})`);
  return v;
}

function nonEmpty(o: Obj, key: string, where: string, maxLength: number): string {
  const v = str(o, key, where, maxLength);
  if (v.length === 0) throw new Invalid(`${where}.${key}: must not be empty`);
  return v;
}

function num(o: Obj, key: string, where: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new Invalid(`${where}.${key}: expected a finite number, got ${describe(v)}`);
  }
  return v;
}

function int(o: Obj, key: string, where: string, min: number): number {
  const v = num(o, key, where);
  if (!Number.isInteger(v) || v < min) throw new Invalid(`${where}.${key}: expected an integer ≥ ${min}, got ${v}`);
  return v;
}

function bool(o: Obj, key: string, where: string): boolean {
  const v = o[key];
  if (typeof v !== "boolean") throw new Invalid(`${where}.${key}: expected a boolean, got ${describe(v)}`);
  return v;
}

function oneOf<T extends string>(o: Obj, key: string, where: string, allowed: readonly T[]): T {
  const v = o[key];
  if (typeof v !== "string" || !(allowed as readonly string[]).includes(v)) {
    throw new Invalid(
      `${where}.${key}: expected one of ${allowed.join(", ")}, got ${JSON.stringify(v) ?? describe(v)}`,
    );
  }
  return v as T;
}

function runId(o: Obj, where: string): string {
  return nonEmpty(o, "runId", where, MAX_RUN_ID_LENGTH);
}

function attempt<T>(f: () => T): Checked<T> {
  try {
    return { ok: true, value: f() };
  } catch (e) {
    if (e instanceof Invalid) return fail(e.message);
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// agent events

const RETRIEVAL_MODES: readonly RetrievalMode[] = ["selective", "never", "always"];
const MATCH_KINDS: readonly MatchKind[] = [
  "exact",
  "normalized",
  "contained",
  "fuzzy",
  "bm25",
  "dense",
  "hybrid",
  "online",
];
/** The engines a fused result can name as reasons (every kind but "hybrid" itself). */
const REASON_KINDS = MATCH_KINDS.filter((k): k is MatchReason["kind"] => k !== "hybrid");
const ERROR_CODES: readonly AgentErrorCode[] = [
  "missing-translation",
  "empty-translation",
  "truncated",
  "search-limit",
  "malformed-tool-call",
  "turn-limit",
  "policy",
  "retrieval",
  "cancelled",
];
const DECISION_KINDS: readonly DecisionKind[] = ["accept", "edit", "reject", "rate"];

function searchHit(x: unknown, where: string): SearchHit {
  const o = obj(x, where);
  const hit: SearchHit = {
    id: str(o, "id", where),
    headword: str(o, "headword", where),
    gloss: str(o, "gloss", where),
    score: num(o, "score", where),
    lang: str(o, "lang", where),
    source: str(o, "source", where),
    match: oneOf(o, "match", where, MATCH_KINDS),
  };
  if (o.tier !== undefined) hit.tier = int(o, "tier", where, 0);
  if (o.online !== undefined) hit.online = bool(o, "online", where);
  if (o.tags !== undefined) {
    if (!Array.isArray(o.tags)) throw new Invalid(`${where}.tags: expected an array, got ${describe(o.tags)}`);
    hit.tags = o.tags.map((t, i) => {
      if (typeof t !== "string") throw new Invalid(`${where}.tags[${i}]: expected a string, got ${describe(t)}`);
      return t;
    });
  }
  if (o.reasons !== undefined) {
    if (!Array.isArray(o.reasons)) throw new Invalid(`${where}.reasons: expected an array, got ${describe(o.reasons)}`);
    hit.reasons = o.reasons.map((r, i) => {
      const at = `${where}.reasons[${i}]`;
      const reason = obj(r, at);
      const checked: MatchReason = { kind: oneOf(reason, "kind", at, REASON_KINDS), score: num(reason, "score", at) };
      if (reason.rank !== undefined) checked.rank = int(reason, "rank", at, 1);
      return checked;
    });
  }
  return hit;
}

/**
 * Checks the parts of a trajectory the panel reads (and that the host may persist); the rest is
 * passed through untouched.
 */
function trajectory(x: unknown, where: string): Trajectory {
  const o = obj(x, where);
  if (o.schema !== "glossa.trajectory/1") {
    throw new Invalid(`${where}.schema: expected "glossa.trajectory/1", got ${JSON.stringify(o.schema) ?? "nothing"}`);
  }
  str(o, "policyId", where);
  str(o, "raw", where);
  if (o.translation !== null) str(o, "translation", where);
  if (!Array.isArray(o.steps)) throw new Invalid(`${where}.steps: expected an array, got ${describe(o.steps)}`);
  if (!Array.isArray(o.corpusIds)) throw new Invalid(`${where}.corpusIds: expected an array`);
  int(o, "searches", where, 0);
  int(o, "turns", where, 0);
  int(o, "completionTokens", where, 0);
  int(o, "promptTokens", where, 0);
  obj(o.request, `${where}.request`);
  const timings = obj(o.timings, `${where}.timings`);
  num(timings, "totalMs", `${where}.timings`);
  num(timings, "retrievalMs", `${where}.timings`);
  if (!Array.isArray(o.warnings) || !o.warnings.every((w) => typeof w === "string")) {
    throw new Invalid(`${where}.warnings: expected an array of strings`);
  }
  return o as unknown as Trajectory;
}

function agentEvent(x: unknown, where: string): AgentEvent {
  const o = obj(x, where);
  const type = o.type;
  switch (type) {
    case "turn-start":
      return { type, turn: int(o, "turn", where, 0) };
    case "think-delta":
    case "translation-delta":
    case "text-delta":
      return { type, text: str(o, "text", where) };
    case "search":
      return { type, query: str(o, "query", where), index: int(o, "index", where, 0) };
    case "evidence": {
      if (!Array.isArray(o.hits)) throw new Invalid(`${where}.hits: expected an array, got ${describe(o.hits)}`);
      const hits = o.hits.map((h, i) => searchHit(h, `${where}.hits[${i}]`));
      return {
        type,
        query: str(o, "query", where),
        index: int(o, "index", where, 0),
        hits,
        information: str(o, "information", where),
        elapsedMs: num(o, "elapsedMs", where),
      };
    }
    case "warning":
      return { type, code: str(o, "code", where), message: str(o, "message", where) };
    case "done":
      return { type, trajectory: trajectory(o.trajectory, `${where}.trajectory`) };
    case "error":
      return {
        type,
        code: oneOf(o, "code", where, ERROR_CODES),
        message: str(o, "message", where),
        trajectory: trajectory(o.trajectory, `${where}.trajectory`),
      };
    default:
      throw new Invalid(`${where}.type: unknown agent event type ${JSON.stringify(type) ?? describe(type)}`);
  }
}

/** Validates one agent event on its own (the host uses it before forwarding events it did not produce). */
export function checkAgentEvent(x: unknown): Checked<AgentEvent> {
  return attempt(() => agentEvent(x, "event"));
}

// ---------------------------------------------------------------------------------------------
// host → webview

export function checkHostMessage(x: unknown): Checked<HostMessage> {
  return attempt((): HostMessage => {
    const o = obj(x, "message");
    const type = o.type;
    const where = typeof type === "string" ? type : "message";
    switch (type) {
      case "run-start":
        return {
          type,
          runId: runId(o, where),
          source: str(o, "source", where, MAX_TEXT_LENGTH),
          sourceLang: str(o, "sourceLang", where, 64),
          targetLang: str(o, "targetLang", where, 64),
          mode: oneOf(o, "mode", where, RETRIEVAL_MODES),
          policyId: str(o, "policyId", where, 1000),
        };
      case "agent-event":
        return { type, runId: runId(o, where), event: agentEvent(o.event, `${where}.event`) };
      case "decision-result": {
        const message: DecisionResultMessage = {
          type,
          runId: runId(o, where),
          ok: bool(o, "ok", where),
          message: str(o, "message", where, 10_000),
        };
        if (o.decision !== undefined) message.decision = oneOf(o, "decision", where, DECISION_KINDS);
        return message;
      }
      default:
        throw new Invalid(`message.type: unknown host message type ${JSON.stringify(type) ?? describe(type)}`);
    }
  });
}

/** Returns the message when valid; otherwise null, after passing the reason to `onReject`. */
export function parseHostMessage(x: unknown, onReject?: (reason: string) => void): HostMessage | null {
  const r = checkHostMessage(x);
  if (r.ok) return r.value;
  onReject?.(r.reason);
  return null;
}

// ---------------------------------------------------------------------------------------------
// webview → host

function translationText(o: Obj, where: string): string {
  const text = str(o, "text", where, MAX_TEXT_LENGTH);
  if (text.trim().length === 0) throw new Invalid(`${where}.text: must not be empty`);
  return text;
}

export function checkWebviewMessage(x: unknown): Checked<WebviewMessage> {
  return attempt((): WebviewMessage => {
    const o = obj(x, "message");
    const type = o.type;
    const where = typeof type === "string" ? type : "message";
    switch (type) {
      case "ready":
        return { type };
      case "accept":
      case "edit-accept":
        return { type, runId: runId(o, where), text: translationText(o, where) };
      case "reject":
      case "cancel":
        return { type, runId: runId(o, where) };
      case "rate": {
        const rating = o.rating;
        if (typeof rating !== "number" || !Number.isInteger(rating) || rating < 1 || rating > 5) {
          throw new Invalid(
            `rate.rating: expected an integer from 1 to 5, got ${JSON.stringify(rating) ?? describe(rating)}`,
          );
        }
        return { type, runId: runId(o, where), rating, comment: str(o, "comment", where, MAX_COMMENT_LENGTH) };
      }
      case "log":
        return {
          type,
          level: oneOf(o, "level", where, ["warn", "error"] as const),
          message: str(o, "message", where, MAX_LOG_LENGTH),
        };
      default:
        throw new Invalid(`message.type: unknown webview message type ${JSON.stringify(type) ?? describe(type)}`);
    }
  });
}

/** Returns the message when valid; otherwise null, after passing the reason to `onReject`. */
export function parseWebviewMessage(x: unknown, onReject?: (reason: string) => void): WebviewMessage | null {
  const r = checkWebviewMessage(x);
  if (r.ok) return r.value;
  onReject?.(r.reason);
  return null;
}

// ---------------------------------------------------------------------------------------------
// coalescing

/** Deltas that may be merged with an adjacent delta of the same type without losing anything. */
export type DeltaEvent = Extract<AgentEvent, { type: "think-delta" | "translation-delta" | "text-delta" }>;

export function isDeltaEvent(event: AgentEvent): event is DeltaEvent {
  return event.type === "think-delta" || event.type === "translation-delta" || event.type === "text-delta";
}

/**
 * Appends an agent-event message to `queue`, merging it into the last message when both are deltas
 * of the same type for the same run. Order is never changed: only adjacent deltas merge. The merged
 * message is a new object, so messages already handed to postMessage are never mutated.
 */
export function appendCoalesced(queue: HostMessage[], message: AgentEventMessage): void {
  const last = queue[queue.length - 1];
  if (
    last !== undefined &&
    last.type === "agent-event" &&
    last.runId === message.runId &&
    isDeltaEvent(last.event) &&
    isDeltaEvent(message.event) &&
    last.event.type === message.event.type
  ) {
    const merged: DeltaEvent = { type: last.event.type, text: last.event.text + message.event.text };
    queue[queue.length - 1] = { type: "agent-event", runId: message.runId, event: merged };
    return;
  }
  queue.push(message);
}
