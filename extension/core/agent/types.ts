import type { SearchHit } from "../retrieval/types";

/** When the agent consults the retriever. `selective` lets the policy decide (SRAT/NeoAMT); the others are the papers' baselines. */
export type RetrievalMode = "selective" | "never" | "always";

/** The prompt family: NeoAMT Table 9 tags, or SRAT's tool_call/answer tags. */
export type PromptStyle = "neoamt" | "srat";

export interface AgentLimits {
  /** Generation turns; each search ends a turn. */
  maxTurns: number;
  maxSearches: number;
  /** Completion tokens over the whole trajectory. */
  maxOutputTokens: number;
  /** Results per search. */
  topk: number;
}

export const DEFAULT_LIMITS: AgentLimits = { maxTurns: 3, maxSearches: 3, maxOutputTokens: 2048, topk: 5 };

export interface TranslateRequest {
  text: string;
  sourceLang: string;
  targetLang: string;
  /** Surrounding text shown to the policy for disambiguation, never translated. */
  context?: string;
  mode: RetrievalMode;
  style: PromptStyle;
  limits: AgentLimits;
}

/** One parsed step of a trajectory. `information` steps are written by the runtime, never by the policy. */
export type Step =
  | { kind: "think"; text: string; closed: boolean }
  | { kind: "search"; query: string; syntax: "search" | "tool_call" }
  | { kind: "information"; text: string; hits: SearchHit[] }
  | { kind: "translation"; text: string; syntax: "translation" | "answer"; closed: boolean }
  | { kind: "text"; text: string };

/** Events the agent emits while it runs; the panel renders them as they arrive. */
export type AgentEvent =
  | { type: "turn-start"; turn: number }
  | { type: "think-delta"; text: string }
  | { type: "search"; query: string; index: number }
  | { type: "evidence"; query: string; index: number; hits: SearchHit[]; information: string; elapsedMs: number }
  | { type: "translation-delta"; text: string }
  | { type: "text-delta"; text: string }
  | { type: "warning"; code: string; message: string }
  | { type: "done"; trajectory: Trajectory }
  | { type: "error"; code: AgentErrorCode; message: string; trajectory: Trajectory };

export type AgentErrorCode =
  | "missing-translation"
  | "empty-translation"
  | "truncated"
  | "search-limit"
  | "malformed-tool-call"
  | "turn-limit"
  | "policy"
  | "retrieval"
  | "cancelled";

export interface Trajectory {
  schema: "glossa.trajectory/1";
  request: TranslateRequest;
  policyId: string;
  corpusIds: string[];
  /** The full assistant text, including runtime-written `<information>` blocks. */
  raw: string;
  steps: Step[];
  translation: string | null;
  searches: number;
  turns: number;
  completionTokens: number;
  promptTokens: number;
  timings: { startedAt: string; firstEventMs: number | null; totalMs: number; retrievalMs: number };
  warnings: string[];
  error?: { code: AgentErrorCode; message: string };
}
