import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions streaming protocol and
 * replays scripted completions. It applies `stop` the way vLLM does (the stop string is left out
 * and reported as `stop_reason`), so the client sees what a real server sends.
 */
export interface ScriptedCompletion {
  /** Chooses this script when the request's messages contain this text and the turn (1 + number of information blocks) matches. */
  when?: { contains?: string; turn?: number };
  /** The model's text for this turn; cut at the first stop string the request names. */
  text?: string;
  /** Characters per streamed chunk (default 3): small chunks split tags, as real tokenizers do. */
  chunkSize?: number;
  /** Milliseconds between chunks. */
  delayMs?: number;
  /** Finish as "length" after this many chunks. */
  lengthAfterChunks?: number;
  /** Failure modes. */
  fail?: "http-500" | "http-401" | "cut" | "malformed-json" | "no-done" | "error-event";
  /** Reuse this script for every matching request (default: used once). */
  repeat?: boolean;
  /** Leave out `stop_reason` (as OpenAI and llama.cpp do). */
  noStopReason?: boolean;
}

export interface RecordedRequest {
  body: {
    model?: string;
    messages?: Array<{ role: string; content: string }>;
    stop?: string[];
    max_tokens?: number;
    continue_final_message?: boolean;
  };
  headers: IncomingMessage["headers"];
  aborted: boolean;
}

export class ScriptedOpenAIServer {
  readonly requests: RecordedRequest[] = [];
  private server: Server | null = null;
  private readonly used = new Set<ScriptedCompletion>();

  constructor(private scripts: ScriptedCompletion[]) {}

  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) throw new Error("server not started");
    return `http://127.0.0.1:${address.port}/v1`;
  }

  setScripts(scripts: ScriptedCompletion[]): void {
    this.scripts = scripts;
    this.used.clear();
  }

  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((e) => {
        if (!res.headersSent) res.writeHead(500).end(String(e));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "GET" && req.url?.endsWith("/models")) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "scripted", object: "model" }] }));
      return;
    }
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const record: RecordedRequest = {
      body: JSON.parse(raw) as RecordedRequest["body"],
      headers: req.headers,
      aborted: false,
    };
    this.requests.push(record);
    res.on("close", () => {
      if (!res.writableFinished) record.aborted = true;
    });
    const script = this.pick(record.body);
    if (!script) {
      res.writeHead(500, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { message: "no scripted completion matches this request" } }));
      return;
    }
    if (script.fail === "http-500" || script.fail === "http-401") {
      const status = script.fail === "http-500" ? 500 : 401;
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: { message: status === 401 ? "Invalid API key" : "scripted server error" } }));
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", Connection: "keep-alive" });
    const stops = record.body.stop ?? [];
    let text = script.text ?? "";
    let stopReason: string | undefined;
    let cut = text.length;
    for (const s of stops) {
      const at = text.indexOf(s);
      if (at >= 0 && at < cut) {
        cut = at;
        stopReason = s;
      }
    }
    text = text.slice(0, cut);
    const size = script.chunkSize ?? 3;
    const chars = [...text];
    const chunks: string[] = [];
    for (let i = 0; i < chars.length; i += size) chunks.push(chars.slice(i, i + size).join(""));
    const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
    const base = {
      id: "chatcmpl-scripted",
      object: "chat.completion.chunk",
      created: 0,
      model: record.body.model ?? "scripted",
    };
    send({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
    let finish: "stop" | "length" = "stop";
    let sent = 0;
    for (const piece of chunks) {
      if (res.destroyed) return;
      if (script.lengthAfterChunks !== undefined && sent >= script.lengthAfterChunks) {
        finish = "length";
        stopReason = undefined;
        break;
      }
      if (script.fail === "cut" && sent === Math.floor(chunks.length / 2)) {
        res.socket?.destroy();
        return;
      }
      if (script.fail === "malformed-json" && sent === Math.floor(chunks.length / 2)) {
        res.write("data: {not json\n\n");
      }
      if (script.fail === "error-event" && sent === Math.floor(chunks.length / 2)) {
        send({ error: { message: "scripted mid-stream failure" } });
      }
      send({ ...base, choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
      sent++;
      if (script.delayMs) await new Promise((r) => setTimeout(r, script.delayMs));
    }
    if (script.fail === "no-done") {
      res.end();
      return;
    }
    send({
      ...base,
      choices: [
        {
          index: 0,
          delta: {},
          finish_reason: finish,
          ...(stopReason && !script.noStopReason ? { stop_reason: stopReason } : {}),
        },
      ],
    });
    send({ ...base, choices: [], usage: { prompt_tokens: 100, completion_tokens: sent, total_tokens: 100 + sent } });
    res.write("data: [DONE]\n\n");
    res.end();
  }

  private pick(body: RecordedRequest["body"]): ScriptedCompletion | undefined {
    const messages = body.messages ?? [];
    const all = messages.map((m) => m.content).join("\n");
    // Runtime-written evidence arrives as user messages (user-turn strategy) or inside the assistant prefix (continue).
    const evidence = messages.slice(1).reduce((n, m) => {
      if (m.role === "user" && m.content.startsWith("<information>")) return n + 1;
      if (m.role === "assistant") return n + (m.content.match(/\n\n<information>/g)?.length ?? 0);
      return n;
    }, 0);
    const effectiveTurn = 1 + evidence;
    return this.scripts.find((s) => {
      if (!s.repeat && this.used.has(s)) return false;
      if (s.when?.contains !== undefined && !all.includes(s.when.contains)) return false;
      if (s.when?.turn !== undefined && s.when.turn !== effectiveTurn) return false;
      if (!s.repeat) this.used.add(s);
      return true;
    });
  }
}
