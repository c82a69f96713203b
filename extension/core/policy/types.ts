/** A chat message in the OpenAI shape; every backend speaks it. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/**
 * One generation turn. The agent calls `stream` once per turn: the first turn with the prompt,
 * later turns with the prompt plus everything generated and retrieved so far (`assistantPrefix`).
 */
export interface GenerateRequest {
  messages: ChatMessage[];
  /**
   * Text the assistant has already produced in this trajectory, including runtime-written
   * `<information>` blocks. Backends that can continue a partial assistant message (embedded,
   * vLLM/SGLang with `continue_final_message`) append it to the prompt; others follow their
   * documented continuation strategy.
   */
  assistantPrefix: string;
  /** Generation stops when any of these strings is produced; the stop string is kept out of the returned text. */
  stop: string[];
  maxTokens: number;
  signal?: AbortSignal;
}

/** Pieces of generated text as they arrive. `tokens` counts tokens in this piece when the backend knows it. */
export interface GenerateDelta {
  text: string;
  tokens?: number;
}

export type FinishReason = "stop" | "length" | "eos" | "aborted";

export interface GenerateSummary {
  finishReason: FinishReason;
  /** The stop string that ended the turn, when finishReason is "stop". */
  stopString?: string;
  /** Completion tokens of this turn (exact where the backend reports usage). */
  completionTokens: number;
  promptTokens?: number;
}

/**
 * A policy backend: something that turns a prompt into a token stream.
 * `stream` yields deltas and returns a summary; it must honour `signal` by ending promptly
 * (rejecting with a PolicyError of code "aborted").
 */
export interface PolicyBackend {
  /** Stable id recorded in trajectories and feedback (e.g. "openai:http://127.0.0.1:8000/v1#qwen2.5-7b"). */
  readonly id: string;
  stream(request: GenerateRequest): AsyncGenerator<GenerateDelta, GenerateSummary, void>;
  dispose?(): Promise<void>;
}

export type PolicyErrorCode =
  | "unreachable"
  | "http"
  | "malformed-stream"
  | "aborted"
  | "model-missing"
  | "model-load"
  | "download"
  | "config";

/** A failure of the policy backend, with a message a translator can act on. */
export class PolicyError extends Error {
  constructor(
    readonly code: PolicyErrorCode,
    message: string,
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = "PolicyError";
  }
}
