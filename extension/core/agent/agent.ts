import { type PolicyBackend, PolicyError } from "../policy/types";
import type { Retriever, SearchHit } from "../retrieval/types";
import { type ParseEvent, TagStreamParser } from "./parser";
import { buildMessages, formatEvidence, informationBlock, PROTOCOL, stopStrings } from "./prompt";
import type { AgentErrorCode, AgentEvent, Step, Trajectory, TranslateRequest } from "./types";

/**
 * The think → (search → information)* → translate loop.
 *
 * Each generation turn streams from the policy until it closes a search (the turn ends, the
 * retriever runs, `<information>` is appended to the assistant text) or the translation.
 * Everything the policy wrote and the runtime appended is kept in `raw`, so a trajectory can be
 * replayed, rendered or trained on exactly as it happened.
 */
export class TranslationAgent {
  constructor(
    private readonly policy: PolicyBackend,
    private readonly retriever: Retriever | undefined,
  ) {}

  async run(
    request: TranslateRequest,
    onEvent: (event: AgentEvent) => void,
    signal?: AbortSignal,
  ): Promise<Trajectory> {
    const run = new AgentRun(this.policy, this.retriever, request, onEvent, signal);
    return run.execute();
  }
}

class AgentError extends Error {
  constructor(
    readonly code: AgentErrorCode,
    message: string,
  ) {
    super(message);
  }
}

class AgentRun {
  private raw = "";
  private readonly parser = new TagStreamParser();
  private readonly hitsByInformation: SearchHit[][] = [];
  private readonly startedAt = Date.now();
  private firstEventMs: number | null = null;
  private retrievalMs = 0;
  private searches = 0;
  private turns = 0;
  private completionTokens = 0;
  private promptTokens = 0;
  private readonly warnings: string[] = [];
  private limitNudged = false;
  private translation: string | null = null;
  private pendingSearch: { query: string } | null = null;
  private malformedToolCall: string | null = null;

  constructor(
    private readonly policy: PolicyBackend,
    private readonly retriever: Retriever | undefined,
    private readonly request: TranslateRequest,
    private readonly onEvent: (event: AgentEvent) => void,
    private readonly signal: AbortSignal | undefined,
  ) {}

  async execute(): Promise<Trajectory> {
    try {
      const messages = buildMessages({ ...this.request, information: await this.preRetrieve() });
      const stop = stopStrings(this.request.style, this.request.mode);
      const limits = this.request.limits;
      while (this.translation === null) {
        this.checkAborted();
        if (this.turns >= limits.maxTurns) {
          throw new AgentError("turn-limit", `The policy did not translate within ${limits.maxTurns} turns.`);
        }
        const budget = limits.maxOutputTokens - this.completionTokens;
        if (budget <= 0) {
          throw new AgentError(
            "truncated",
            `The output token limit (${limits.maxOutputTokens}) was reached before a translation.`,
          );
        }
        this.turns++;
        this.emit({ type: "turn-start", turn: this.turns });
        const finish = await this.generateTurn(messages, stop, budget);
        await this.endTurn(finish);
      }
      const translation = this.translation.trim();
      if (!translation) throw new AgentError("empty-translation", "The policy produced an empty translation.");
      const trajectory = this.trajectory(translation);
      this.emit({ type: "done", trajectory });
      return trajectory;
    } catch (e) {
      const { code, message } = classify(e, this.signal);
      const trajectory = this.trajectory(null, { code, message });
      this.emit({ type: "error", code, message, trajectory });
      return trajectory;
    }
  }

  /** Mode "always": retrieve with the source text before the first turn (the papers' always-retrieve baseline). */
  private async preRetrieve(): Promise<string | undefined> {
    if (this.request.mode !== "always") return undefined;
    const hits = await this.retrieve(this.request.text, 0);
    return formatEvidence(hits);
  }

  private async generateTurn(
    messages: ReturnType<typeof buildMessages>,
    stop: string[],
    budget: number,
  ): Promise<{ reason: string; stopString?: string }> {
    const stream = this.policy.stream({
      messages,
      assistantPrefix: this.raw,
      stop,
      maxTokens: budget,
      signal: this.signal,
    });
    for (;;) {
      const next = await stream.next();
      if (next.done) {
        this.completionTokens += next.value.completionTokens;
        this.promptTokens += next.value.promptTokens ?? 0;
        return { reason: next.value.finishReason, stopString: next.value.stopString };
      }
      this.raw += next.value.text;
      this.handle(this.parser.push(next.value.text));
      if (this.pendingSearch || this.translation !== null || this.malformedToolCall) {
        // The policy closed a search or the translation even though the backend did not stop on it:
        // end the turn here rather than let it keep generating.
        await stream.return({ finishReason: "stop", completionTokens: 0 });
        return { reason: "stop" };
      }
    }
  }

  private async endTurn(finish: { reason: string; stopString?: string }): Promise<void> {
    if (finish.stopString && !this.pendingSearch && this.translation === null) {
      // Backends drop the stop string; write it back so `raw` is exactly what the policy meant.
      this.raw += finish.stopString;
      this.handle(this.parser.push(finish.stopString));
    }
    if (finish.reason === "aborted") throw new AgentError("cancelled", "Translation cancelled.");
    if (this.translation === null && !this.pendingSearch && !this.malformedToolCall) {
      const open = this.parser.openRegion;
      if ((open === "search" || open === "tool_call") && finish.reason !== "length") {
        const closing = open === "search" ? "</search>" : "</tool_call>";
        this.raw += closing;
        this.handle(this.parser.closeOpenSearch());
      } else if ((open === "translation" || open === "answer") && finish.reason !== "length") {
        // Ended at EOS inside the translation: complete, but the tag was not closed.
        const closing = open === "translation" ? "</translation>" : "</answer>";
        this.warn(
          "unclosed-translation",
          `The policy ended without ${closing}; the translation was taken as complete.`,
        );
        this.raw += closing;
        this.handle(this.parser.push(closing));
      }
    }
    this.handle(this.parser.end());
    if (this.malformedToolCall) throw new AgentError("malformed-tool-call", this.malformedToolCall);
    if (this.pendingSearch) {
      const { query } = this.pendingSearch;
      this.pendingSearch = null;
      await this.answerSearch(query);
      return;
    }
    if (this.translation !== null) return;
    if (finish.reason === "length") {
      throw new AgentError(
        "truncated",
        `The output was cut at the token limit (${this.request.limits.maxOutputTokens}) before the translation was complete.`,
      );
    }
    throw new AgentError(
      "missing-translation",
      "The policy finished without a <translation> (or <answer>) block; nothing was inserted. The raw output is kept in the trajectory.",
    );
  }

  private async answerSearch(query: string): Promise<void> {
    const limits = this.request.limits;
    const allowed = this.request.mode === "never" ? 0 : limits.maxSearches;
    const turnsLeft = this.turns < limits.maxTurns;
    if (this.searches < allowed && turnsLeft) {
      this.searches++;
      const hits = await this.retrieve(query, this.searches);
      this.appendInformation(formatEvidence(hits), hits);
      return;
    }
    if (!this.limitNudged && turnsLeft) {
      // Documented fallback: one refusal that tells the policy to translate now; a second search is an error.
      this.limitNudged = true;
      const reason = allowed === 0 ? PROTOCOL.information.search_disabled : PROTOCOL.information.search_limit;
      this.warn("search-limit", `Search "${query}" was refused: ${reason}`);
      this.appendInformation(reason, []);
      return;
    }
    throw new AgentError(
      "search-limit",
      `The policy kept searching past the limit (${allowed} searches, ${limits.maxTurns} turns) without translating.`,
    );
  }

  private async retrieve(query: string, index: number): Promise<SearchHit[]> {
    this.emit({ type: "search", query, index });
    const started = Date.now();
    let hits: SearchHit[] = [];
    if (this.retriever) {
      try {
        hits = await this.retriever.search(query, {
          topk: this.request.limits.topk,
          langs: undefined,
          signal: this.signal,
          onWarning: (message) => this.warn("retrieval", message),
        });
      } catch (e) {
        this.checkAborted();
        throw new AgentError("retrieval", `Search failed for "${query}": ${(e as Error).message}`);
      }
    } else {
      this.warn("no-retriever", "No glossary or dictionary is loaded; the search returned nothing.");
    }
    const elapsedMs = Date.now() - started;
    this.retrievalMs += elapsedMs;
    this.emit({ type: "evidence", query, index, hits, information: formatEvidence(hits), elapsedMs });
    return hits;
  }

  private appendInformation(body: string, hits: SearchHit[]): void {
    const block = informationBlock(body);
    this.raw += block;
    this.hitsByInformation.push(hits);
    this.handle(this.parser.push(block));
  }

  private handle(events: ParseEvent[]): void {
    for (const event of events) {
      switch (event.type) {
        case "think-delta":
          this.emit({ type: "think-delta", text: event.text });
          break;
        case "translation-delta":
          this.emit({ type: "translation-delta", text: event.text });
          break;
        case "text-delta":
          // Whitespace between tags is layout, not output worth showing.
          if (event.text.trim()) this.emit({ type: "text-delta", text: event.text });
          break;
        case "search":
          if (event.warning) this.warn("tool-call-text", event.warning);
          this.pendingSearch = { query: event.query };
          break;
        case "malformed-tool-call":
          this.malformedToolCall = `Malformed tool call: ${event.reason}.`;
          break;
        case "translation-end":
          this.translation = event.text;
          break;
        default:
          break;
      }
    }
  }

  private warn(code: string, message: string): void {
    this.warnings.push(`${code}: ${message}`);
    this.emit({ type: "warning", code, message });
  }

  private emit(event: AgentEvent): void {
    if (this.firstEventMs === null && event.type !== "turn-start") this.firstEventMs = Date.now() - this.startedAt;
    this.onEvent(event);
  }

  private checkAborted(): void {
    if (this.signal?.aborted) throw new AgentError("cancelled", "Translation cancelled.");
  }

  private trajectory(translation: string | null, error?: { code: AgentErrorCode; message: string }): Trajectory {
    return {
      schema: "glossa.trajectory/1",
      request: this.request,
      policyId: this.policy.id,
      corpusIds: [...(this.retriever?.corpusIds ?? [])],
      raw: this.raw,
      steps: this.stepsWithHits(),
      translation,
      searches: this.searches,
      turns: this.turns,
      completionTokens: this.completionTokens,
      promptTokens: this.promptTokens,
      timings: {
        startedAt: new Date(this.startedAt).toISOString(),
        firstEventMs: this.firstEventMs,
        totalMs: Date.now() - this.startedAt,
        retrievalMs: this.retrievalMs,
      },
      warnings: this.warnings,
      ...(error ? { error } : {}),
    };
  }

  /** Parsed steps, with each runtime-written information step carrying the hits it was made from. */
  private stepsWithHits(): Step[] {
    let n = 0;
    return this.parser.snapshot().map((step) => {
      if (step.kind !== "information") return step;
      const hits = this.hitsByInformation[n++] ?? [];
      return { ...step, hits };
    });
  }
}

/** The trajectory of a run that failed before the policy produced anything (e.g. the model could not be loaded). */
export function failedTrajectory(
  request: TranslateRequest,
  policyId: string,
  error: { code: AgentErrorCode; message: string },
): Trajectory {
  return {
    schema: "glossa.trajectory/1",
    request,
    policyId,
    corpusIds: [],
    raw: "",
    steps: [],
    translation: null,
    searches: 0,
    turns: 0,
    completionTokens: 0,
    promptTokens: 0,
    timings: { startedAt: new Date().toISOString(), firstEventMs: null, totalMs: 0, retrievalMs: 0 },
    warnings: [],
    error,
  };
}

function classify(e: unknown, signal: AbortSignal | undefined): { code: AgentErrorCode; message: string } {
  if (e instanceof AgentError) return { code: e.code, message: e.message };
  if (e instanceof PolicyError) {
    if (e.code === "aborted" || signal?.aborted) return { code: "cancelled", message: "Translation cancelled." };
    return { code: "policy", message: e.message };
  }
  if (signal?.aborted) return { code: "cancelled", message: "Translation cancelled." };
  return { code: "policy", message: e instanceof Error ? e.message : String(e) };
}
