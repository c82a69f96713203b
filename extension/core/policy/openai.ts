import type { IncomingMessage } from "node:http";
import axios, { type AxiosError } from "axios";
import {
  type ChatMessage,
  type FinishReason,
  type GenerateDelta,
  type GenerateRequest,
  type GenerateSummary,
  type PolicyBackend,
  PolicyError,
} from "./types";

/**
 * How a turn after a search reaches the server.
 * - `user-turn`: the assistant text so far becomes an assistant message and the runtime's
 *   `<information>` block a user message; works with every chat server (OpenAI, Ollama, llama.cpp).
 * - `continue`: the assistant text is sent as a partial final message with vLLM/SGLang's
 *   `continue_final_message`, so a policy trained on single-turn trajectories sees exactly its training format.
 */
export type ContinuationStrategy = "user-turn" | "continue";

export interface OpenAIPolicyOptions {
  /** Base URL including the version segment, e.g. http://127.0.0.1:8000/v1 */
  endpoint: string;
  model: string;
  apiKey?: string;
  continuation?: ContinuationStrategy;
  temperature?: number;
  /** Milliseconds to wait for the first byte of the response. */
  timeoutMs?: number;
}

const INFO_OPEN = "<information>";

/** An OpenAI-compatible chat-completions client with server-sent-event streaming. */
export class OpenAIPolicy implements PolicyBackend {
  readonly id: string;
  private readonly url: string;

  constructor(private readonly options: OpenAIPolicyOptions) {
    const base = options.endpoint.replace(/\/+$/, "");
    this.url = `${base}/chat/completions`;
    this.id = `openai:${base}#${options.model}`;
  }

  async *stream(request: GenerateRequest): AsyncGenerator<GenerateDelta, GenerateSummary, void> {
    const body = this.body(request);
    let response: IncomingMessage;
    try {
      const res = await axios.post<IncomingMessage>(this.url, body, {
        responseType: "stream",
        signal: request.signal,
        timeout: this.options.timeoutMs ?? 60_000,
        headers: {
          "Content-Type": "application/json",
          Accept: "text/event-stream",
          ...(this.options.apiKey ? { Authorization: `Bearer ${this.options.apiKey}` } : {}),
        },
        validateStatus: () => true,
        // Proxies from the environment would route loopback servers elsewhere.
        proxy: false,
      });
      response = res.data;
      if (res.status < 200 || res.status >= 300) {
        const text = await readAll(response, 4000);
        throw new PolicyError("http", `${this.url} answered HTTP ${res.status}: ${errorMessage(text)}`);
      }
    } catch (e) {
      throw this.requestError(e, request.signal);
    }

    let completionTokens = 0;
    let promptTokens: number | undefined;
    let finishReason: FinishReason | undefined;
    let stopString: string | undefined;
    let buffer = "";
    const decoder = new TextDecoder("utf-8");
    const onAbort = () => response.destroy();
    request.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const chunk of response) {
        buffer += decoder.decode(chunk as Buffer, { stream: true });
        let newline = buffer.indexOf("\n");
        while (newline >= 0) {
          const line = buffer.slice(0, newline).replace(/\r$/, "");
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf("\n");
          if (!line.startsWith("data:")) continue; // comments, event names, blank separators
          const data = line.slice(5).trim();
          if (data === "[DONE]") {
            return summary();
          }
          const event = parseChunk(data);
          if (event.usage) {
            completionTokens = event.usage.completion_tokens ?? completionTokens;
            promptTokens = event.usage.prompt_tokens ?? promptTokens;
          }
          const choice = event.choices?.[0];
          const text = choice?.delta?.content;
          if (typeof text === "string" && text.length > 0) {
            if (!event.usage) completionTokens++;
            yield { text, tokens: 1 };
          }
          if (choice?.finish_reason) {
            finishReason = choice.finish_reason === "length" ? "length" : "stop";
            const reason = choice.stop_reason;
            if (typeof reason === "string" && request.stop.includes(reason)) stopString = reason;
          }
        }
      }
    } catch (e) {
      if (request.signal?.aborted) throw new PolicyError("aborted", "Generation cancelled.");
      if (e instanceof PolicyError) throw e;
      throw new PolicyError("malformed-stream", `The stream from ${this.url} broke off: ${(e as Error).message}`);
    } finally {
      request.signal?.removeEventListener("abort", onAbort);
      response.destroy();
    }
    if (request.signal?.aborted) throw new PolicyError("aborted", "Generation cancelled.");
    if (!finishReason) {
      throw new PolicyError("malformed-stream", `The stream from ${this.url} ended without a finish reason or [DONE].`);
    }
    return summary();

    function summary(): GenerateSummary {
      return { finishReason: finishReason ?? "stop", stopString, completionTokens, promptTokens };
    }
  }

  private body(request: GenerateRequest): Record<string, unknown> {
    const messages: ChatMessage[] = [...request.messages];
    const extra: Record<string, unknown> = {};
    if (request.assistantPrefix) {
      if (this.options.continuation === "continue") {
        messages.push({ role: "assistant", content: request.assistantPrefix });
        extra.continue_final_message = true;
        extra.add_generation_prompt = false;
      } else {
        messages.push(...splitAtInformation(request.assistantPrefix));
      }
    }
    return {
      model: this.options.model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: request.maxTokens,
      temperature: this.options.temperature ?? 0,
      stop: request.stop.slice(0, 4), // the OpenAI API accepts at most four
      ...extra,
    };
  }

  private requestError(e: unknown, signal: AbortSignal | undefined): PolicyError {
    if (e instanceof PolicyError) return e;
    if (signal?.aborted || axios.isCancel(e)) return new PolicyError("aborted", "Generation cancelled.");
    const err = e as AxiosError;
    const code = err.code ?? "";
    if (
      ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ECONNRESET", "EHOSTUNREACH", "ETIMEDOUT", "ECONNABORTED"].includes(
        code,
      )
    ) {
      return new PolicyError(
        "unreachable",
        `Cannot reach the policy endpoint ${this.options.endpoint} (${code}). Check glossa.policy.endpoint, or switch glossa.policy.backend to "embedded".`,
      );
    }
    return new PolicyError("http", `Request to ${this.url} failed: ${err.message}`);
  }
}

/**
 * Splits the assistant text at runtime-written information blocks: the policy's text becomes
 * assistant messages, each information block a user message.
 */
export function splitAtInformation(prefix: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let rest = prefix;
  for (;;) {
    const start = rest.indexOf(INFO_OPEN);
    if (start < 0) break;
    const end = rest.indexOf("</information>", start);
    if (end < 0) break;
    const before = rest.slice(0, start).trim();
    if (before) messages.push({ role: "assistant", content: before });
    messages.push({ role: "user", content: rest.slice(start, end + "</information>".length) });
    rest = rest.slice(end + "</information>".length);
  }
  if (rest.trim()) messages.push({ role: "assistant", content: rest.trim() });
  return messages;
}

interface ChunkEvent {
  choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null; stop_reason?: unknown }>;
  usage?: { completion_tokens?: number; prompt_tokens?: number } | null;
  error?: { message?: string };
}

function parseChunk(data: string): ChunkEvent {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new PolicyError("malformed-stream", `The server sent a stream chunk that is not JSON: ${data.slice(0, 120)}`);
  }
  if (typeof value !== "object" || value === null) {
    throw new PolicyError(
      "malformed-stream",
      `The server sent a stream chunk that is not an object: ${data.slice(0, 120)}`,
    );
  }
  const event = value as ChunkEvent;
  if (event.error)
    throw new PolicyError("http", `The server reported an error mid-stream: ${event.error.message ?? "unknown"}`);
  return event;
}

async function readAll(stream: IncomingMessage, limit: number): Promise<string> {
  let text = "";
  for await (const chunk of stream) {
    text += String(chunk);
    if (text.length > limit) break;
  }
  stream.destroy();
  return text.slice(0, limit);
}

function errorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
    if (typeof parsed.error === "string") return parsed.error;
    return parsed.error?.message ?? parsed.message ?? body.slice(0, 300);
  } catch {
    return body.slice(0, 300) || "(empty body)";
  }
}
