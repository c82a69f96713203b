import type { Step } from "./types";

/**
 * Incremental parser for the policy's tag grammar (protocol/grammar.md).
 *
 * Text arrives in arbitrary chunks (a tag may be split across chunks), so anything that could
 * still turn out to be the start of a tag is held back until it is resolved. The parser never
 * interprets model output as anything but text and tags.
 */

type Region = "none" | "think" | "search" | "tool_call" | "information" | "translation" | "answer";

export type ParseEvent =
  | { type: "think-delta"; text: string }
  | { type: "think-end" }
  | { type: "search"; query: string; syntax: "search" | "tool_call"; warning?: string }
  | { type: "malformed-tool-call"; body: string; reason: string }
  | { type: "information"; text: string }
  | { type: "translation-delta"; text: string }
  | { type: "translation-end"; text: string }
  | { type: "text-delta"; text: string };

const OPEN: Record<string, Region> = {
  "<think>": "think",
  "<search>": "search",
  "<tool_call>": "tool_call",
  "<information>": "information",
  "<translation>": "translation",
  "<answer>": "answer",
};

const CLOSE: Record<string, Region> = {
  "</think>": "think",
  "</search>": "search",
  "</tool_call>": "tool_call",
  "</information>": "information",
  "</translation>": "translation",
  "</answer>": "answer",
  // NeoAMT's Table 9 example writes "<think/>" as the closing tag; models trained on it copy it.
  "<think/>": "think",
};

const ALL_TAGS = [...Object.keys(OPEN), ...Object.keys(CLOSE)];
const LONGEST_TAG = Math.max(...ALL_TAGS.map((t) => t.length));

export class TagStreamParser {
  private region: Region = "none";
  private pending = "";
  private collected = "";
  private translation = "";
  private readonly steps: Step[] = [];

  /** Feeds a chunk; returns the events it completes, in order. */
  push(chunk: string): ParseEvent[] {
    this.pending += chunk;
    const events: ParseEvent[] = [];
    for (;;) {
      const lt = this.pending.indexOf("<");
      if (lt < 0) {
        this.emitText(this.pending, events);
        this.pending = "";
        return events;
      }
      if (lt > 0) {
        this.emitText(this.pending.slice(0, lt), events);
        this.pending = this.pending.slice(lt);
      }
      const tag = ALL_TAGS.find((t) => this.pending.startsWith(t));
      if (tag) {
        this.pending = this.pending.slice(tag.length);
        this.onTag(tag, events);
        continue;
      }
      const couldBeTag = ALL_TAGS.some((t) => t.startsWith(this.pending)) && this.pending.length < LONGEST_TAG;
      if (couldBeTag) return events; // wait for more text
      this.emitText("<", events);
      this.pending = this.pending.slice(1);
    }
  }

  /** Flushes held-back text at the end of the stream. */
  end(): ParseEvent[] {
    const events: ParseEvent[] = [];
    if (this.pending) {
      this.emitText(this.pending, events);
      this.pending = "";
    }
    return events;
  }

  /** The region the stream is in now (after everything pushed so far). */
  get openRegion(): Region {
    return this.region;
  }

  /** Closes an open search or tool call at the end of a turn (servers strip the stop string). */
  closeOpenSearch(): ParseEvent[] {
    const events = this.end();
    if (this.region === "search") this.onTag("</search>", events);
    else if (this.region === "tool_call") this.onTag("</tool_call>", events);
    return events;
  }

  /** Parsed steps so far, with open regions reported as unclosed. */
  snapshot(): Step[] {
    const steps = this.steps.filter((s) => s.kind !== "text" || s.text.trim()).map((s) => ({ ...s }));
    if (this.region === "think") steps.push({ kind: "think", text: this.collected, closed: false });
    if (this.region === "translation" || this.region === "answer") {
      steps.push({ kind: "translation", text: this.translation, syntax: this.region, closed: false });
    }
    return steps;
  }

  private emitText(text: string, events: ParseEvent[]): void {
    if (!text) return;
    switch (this.region) {
      case "think":
        this.collected += text;
        events.push({ type: "think-delta", text });
        return;
      case "translation":
      case "answer":
        this.translation += text;
        events.push({ type: "translation-delta", text });
        return;
      case "none": {
        const last = this.steps.at(-1);
        if (last?.kind === "text") last.text += text;
        else this.steps.push({ kind: "text", text });
        events.push({ type: "text-delta", text });
        return;
      }
      default:
        this.collected += text;
    }
  }

  private onTag(tag: string, events: ParseEvent[]): void {
    const opens = OPEN[tag];
    const closes = CLOSE[tag];
    if (opens && this.region === "none") {
      this.region = opens;
      this.collected = "";
      this.translation = "";
      return;
    }
    if (closes && closes === this.region) {
      this.closeRegion(events);
      return;
    }
    if (tag === "<think/>" && this.region === "none") return; // a stray self-closing think carries nothing
    // A tag that does not fit the current region (e.g. <search> inside <think>): keep it as text
    // of the region so nothing the model wrote is lost.
    this.emitText(tag, events);
  }

  private closeRegion(events: ParseEvent[]): void {
    const region = this.region;
    this.region = "none";
    const body = this.collected;
    this.collected = "";
    switch (region) {
      case "think":
        this.steps.push({ kind: "think", text: body, closed: true });
        events.push({ type: "think-end" });
        return;
      case "search": {
        const query = body.trim();
        this.steps.push({ kind: "search", query, syntax: "search" });
        events.push({ type: "search", query, syntax: "search" });
        return;
      }
      case "tool_call": {
        const parsed = parseToolCall(body);
        if ("query" in parsed) {
          this.steps.push({ kind: "search", query: parsed.query, syntax: "tool_call" });
          events.push({ type: "search", query: parsed.query, syntax: "tool_call", warning: parsed.warning });
        } else {
          this.steps.push({ kind: "text", text: `<tool_call>${body}</tool_call>` });
          events.push({ type: "malformed-tool-call", body, reason: parsed.reason });
        }
        return;
      }
      case "information":
        this.steps.push({ kind: "information", text: body, hits: [] });
        events.push({ type: "information", text: body });
        return;
      case "translation":
      case "answer": {
        const text = this.translation;
        this.translation = "";
        this.steps.push({ kind: "translation", text, syntax: region, closed: true });
        events.push({ type: "translation-end", text });
        return;
      }
      default:
        return;
    }
  }
}

/**
 * Reads SRAT's `{"name":"search","arguments":{"query":"…"}}`. A body that is not JSON at all is
 * taken as the query itself (documented fallback, reported as a warning); JSON naming another
 * tool or lacking a string query is malformed.
 */
export function parseToolCall(body: string): { query: string; warning?: string } | { reason: string } {
  const trimmed = body.trim();
  if (!trimmed) return { reason: "empty tool call" };
  if (!trimmed.startsWith("{")) {
    return { query: trimmed, warning: "tool call was not JSON; its text was used as the query" };
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (e) {
    return { reason: `tool call is not valid JSON (${(e as Error).message})` };
  }
  if (typeof value !== "object" || value === null) return { reason: "tool call is not a JSON object" };
  const call = value as { name?: unknown; arguments?: unknown };
  if (call.name !== "search") return { reason: `unknown tool ${JSON.stringify(call.name)}; only "search" exists` };
  let args = call.arguments;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      return { reason: "tool call arguments are not valid JSON" };
    }
  }
  const query = typeof args === "object" && args !== null ? (args as { query?: unknown }).query : undefined;
  if (typeof query !== "string" || !query.trim()) return { reason: "tool call has no string 'query' argument" };
  return { query: query.trim() };
}

/** Parses a whole raw trajectory text into steps (the golden vectors' reference function). */
export function parseTrajectory(raw: string): Step[] {
  const parser = new TagStreamParser();
  parser.push(raw);
  parser.end();
  return parser.snapshot();
}
