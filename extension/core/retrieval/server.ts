import http from "node:http";
import type { AddressInfo } from "node:net";
import { LruCache } from "./cache";
import type { MatchKind, MatchReason, Retriever, SearchHit } from "./types";

/**
 * The retrieval server for training rollouts, in the shape of Search-R1's `retrieval_server.py`.
 *
 * `POST /retrieve`, `Content-Type: application/json`:
 *   {"queries": ["…", …], "topk": 5, "return_scores": true, "langs": ["zh", "en"]}
 * - `queries`: 1..maxQueries strings (required). An empty or blank query gets an empty list.
 * - `topk`: integer 1..topkMax; absent or null → topkDefault.
 * - `return_scores`: boolean; absent or null → false (as in Search-R1).
 * - `langs`: language tags restricting results to those headword languages; absent, null or [] → all.
 * - Other fields are ignored, so newer clients keep working.
 *
 * 200 answer: {"result": [[item, …], …]}, one list per query, in query order, best first, where item is
 *   {"id", "text", "score", "lang", "source", "match", "headword", "gloss",
 *    "tier"?, "online"?, "reasons"?, "tags"?, "document": {"id", "contents"}}
 * - `text` is the evidence line the agent shows: "headword — gloss" on one line.
 * - `document.contents` is Search-R1's corpus field: the title (headword) on the first line, the text
 *   (gloss) after it, so Search-R1 rollout code that reads `item["document"]["contents"]` and
 *   `item["score"]` works unchanged.
 * - `score` is present only when return_scores is true (Search-R1 omits scores otherwise; its items are
 *   then bare documents, ours keep the same fields minus `score`).
 * - "truncated": [query indices] appears when queries were cut (below).
 *
 * Bounded input, documented rule: a query longer than `maxQueryChars` code points (default 1000) is cut
 * to that many code points and its index listed in "truncated"; control characters become spaces and
 * unpaired surrogates U+FFFD. The body is limited to `maxBodyBytes` (413 beyond), so a 100 KB query is
 * answered (truncated) while a 10 MB body is refused before it is read.
 *
 * `GET /health` → {"status": "ok", "corpora", "cache", "requests", "limits"}.
 *
 * Errors are JSON {"error": message, "code": machine-readable code} with: 400 bad_json, not_utf8,
 * bad_request (wrong field types), no_queries, too_many_queries, bad_topk, bad_langs; 404 not_found;
 * 405 method_not_allowed (with Allow); 413 body_too_large; 415 unsupported_media_type; 500 internal (a
 * search that threw, with its message). A client that disconnects cancels its batch.
 *
 * Binds 127.0.0.1 unless told otherwise; a non-loopback address needs `allowNonLoopback` and logs a warning.
 */
export interface RetrievalServerOptions {
  retriever: Retriever;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8765; 0 picks a free port. */
  port?: number;
  allowNonLoopback?: boolean;
  /** Default 5. */
  topkDefault?: number;
  /** Default 50. */
  topkMax?: number;
  /** Queries per request. Default 512. */
  maxQueries?: number;
  /** Code points kept per query. Default 1000. */
  maxQueryChars?: number;
  /** Request body limit. Default 4 MiB. */
  maxBodyBytes?: number;
  /** Result lists cached per (query, topk, langs). Default 10 000; 0 disables the cache. */
  cacheEntries?: number;
  /** Warnings and internal errors, one line each. Default: stderr. */
  log?: (line: string) => void;
}

/** One result as served; see the module comment. */
export interface RetrievedItem {
  id: string;
  text: string;
  score?: number;
  lang: string;
  source: string;
  match: MatchKind;
  headword: string;
  gloss: string;
  tier?: number;
  online?: boolean;
  reasons?: MatchReason[];
  tags?: string[];
  document: { id: string; contents: string };
}

export interface RetrievalServerStats {
  requests: number;
  queries: number;
  errors4xx: number;
  errors5xx: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface RetrieveRequest {
  queries: string[];
  topk: number;
  returnScores: boolean;
  langs: string[];
}

const LANG_TAG = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;
const CONTROL = /\p{Cc}/gu;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export class RetrievalServer {
  readonly stats: RetrievalServerStats = { requests: 0, queries: 0, errors4xx: 0, errors5xx: 0 };
  readonly cache: LruCache<RetrievedItem[]>;
  private readonly topkDefault: number;
  private readonly topkMax: number;
  private readonly maxQueries: number;
  private readonly maxQueryChars: number;
  private readonly maxBodyBytes: number;
  private readonly log: (line: string) => void;
  private server: http.Server | undefined;
  /** Set by `start` before the server is handed out. */
  private address!: AddressInfo;

  private constructor(private readonly options: RetrievalServerOptions) {
    this.topkMax = options.topkMax ?? 50;
    this.topkDefault = Math.min(options.topkDefault ?? 5, this.topkMax);
    this.maxQueries = options.maxQueries ?? 512;
    this.maxQueryChars = options.maxQueryChars ?? 1000;
    this.maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
    this.cache = new LruCache({ maxEntries: options.cacheEntries ?? 10_000 });
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  static async start(options: RetrievalServerOptions): Promise<RetrievalServer> {
    const host = options.host ?? "127.0.0.1";
    if (!isLoopback(host) && !options.allowNonLoopback) {
      throw new Error(
        `Refusing to serve on ${host}: it is not a loopback address. Allow it explicitly to expose the corpora to other machines.`,
      );
    }
    if (options.topkMax !== undefined && !(Number.isInteger(options.topkMax) && options.topkMax >= 1)) {
      throw new Error(`topkMax must be a positive integer, not ${options.topkMax}`);
    }
    const self = new RetrievalServer(options);
    if (!isLoopback(host)) {
      self.log(`warning: serving on ${host}, not loopback: anyone who can reach this port can query the corpora.`);
    }
    const server = http.createServer((req, res) => {
      self.handle(req, res).catch((e: unknown) => self.fail(res, e));
    });
    // Trainers keep connections open between batches; slow or stalled bodies are cut.
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 20_000;
    server.requestTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 8765, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    self.server = server;
    self.address = server.address() as AddressInfo;
    return self;
  }

  get port(): number {
    return this.address.port;
  }

  get url(): string {
    const address = this.address;
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  /** Stops accepting, lets requests in flight finish (up to `graceMs`), then closes every connection. */
  async close(graceMs = 2000): Promise<void> {
    const server = this.server;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    await closed;
    clearTimeout(timer);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.stats.requests++;
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path === "/health") {
      if (req.method !== "GET" && req.method !== "HEAD") {
        throw new HttpError(405, "method_not_allowed", `${req.method} is not allowed on /health; use GET`, {
          allow: "GET, HEAD",
        });
      }
      this.send(res, 200, this.health(), req.method === "HEAD");
      return;
    }
    if (path !== "/retrieve") throw new HttpError(404, "not_found", `No such path: ${path}; use POST /retrieve`);
    if (req.method !== "POST") {
      throw new HttpError(405, "method_not_allowed", `${req.method} is not allowed on /retrieve; use POST`, {
        allow: "POST",
      });
    }
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json") {
      throw new HttpError(
        415,
        "unsupported_media_type",
        `Send the request as Content-Type: application/json, not ${type ? JSON.stringify(type) : "no content type"}`,
      );
    }
    const request = this.validate(await this.readJson(req));
    const cancelled = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) cancelled.abort();
    });
    const result: RetrievedItem[][] = [];
    const truncated: number[] = [];
    for (const [i, raw] of request.queries.entries()) {
      const { query, cut } = this.boundQuery(raw);
      if (cut) truncated.push(i);
      const items = await this.retrieve(query, request, cancelled.signal);
      result.push(request.returnScores ? items : items.map(({ score: _score, ...rest }) => rest));
    }
    this.stats.queries += request.queries.length;
    this.send(res, 200, truncated.length ? { result, truncated } : { result });
  }

  private async retrieve(query: string, request: RetrieveRequest, signal: AbortSignal): Promise<RetrievedItem[]> {
    if (!query.trim()) return [];
    const key = `${request.topk}\u0000${request.langs.join(",")}\u0000${query}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    signal.throwIfAborted();
    const hits = await this.options.retriever.search(query, {
      topk: request.topk,
      langs: request.langs.length ? request.langs : undefined,
      signal,
    });
    const items = hits.slice(0, request.topk).map(toItem);
    this.cache.set(key, items);
    return items;
  }

  private boundQuery(raw: string): { query: string; cut: boolean } {
    const clean = raw.replace(LONE_SURROGATE, "\ufffd").replace(CONTROL, " ");
    // A string of at most maxQueryChars UTF-16 units has at most that many code points.
    if (clean.length <= this.maxQueryChars) return { query: clean, cut: false };
    let points = 0;
    let end = 0;
    for (const char of clean) {
      if (points === this.maxQueryChars) return { query: clean.slice(0, end), cut: true };
      points++;
      end += char.length;
    }
    return { query: clean, cut: false };
  }

  /**
   * Reads the body up to the limit. A body declared too large is refused before reading; one that turns
   * out too large is drained without being kept, so the client reads the 413 instead of a reset.
   */
  private async readJson(req: http.IncomingMessage): Promise<unknown> {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) {
      throw new HttpError(413, "body_too_large", `The body is ${declared} bytes; the limit is ${this.maxBodyBytes}`);
    }
    const body = await new Promise<Buffer | null>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size <= this.maxBodyBytes) chunks.push(chunk);
      });
      req.once("end", () => resolve(size <= this.maxBodyBytes ? Buffer.concat(chunks) : null));
      req.once("error", reject);
    });
    if (body === null) {
      throw new HttpError(413, "body_too_large", `The body is over the limit of ${this.maxBodyBytes} bytes`);
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(body);
    } catch {
      throw new HttpError(400, "not_utf8", "The body is not valid UTF-8");
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      throw new HttpError(400, "bad_json", `The body is not valid JSON: ${(e as Error).message}`);
    }
  }

  private validate(body: unknown): RetrieveRequest {
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new HttpError(400, "bad_request", 'The body must be a JSON object like {"queries": ["…"], "topk": 5}');
    }
    const { queries, topk, return_scores, langs } = body as Record<string, unknown>;
    if (typeof queries === "string") {
      throw new HttpError(400, "bad_request", '"queries" must be a list of strings; wrap a single query in [ ]');
    }
    if (!Array.isArray(queries)) throw new HttpError(400, "bad_request", '"queries" (a list of strings) is required');
    if (queries.length === 0) throw new HttpError(400, "no_queries", '"queries" is empty');
    if (queries.length > this.maxQueries) {
      throw new HttpError(
        400,
        "too_many_queries",
        `${queries.length} queries in one request; the limit is ${this.maxQueries}: split the batch`,
      );
    }
    const wrong = queries.findIndex((q) => typeof q !== "string");
    if (wrong >= 0) {
      throw new HttpError(400, "bad_request", `queries[${wrong}] is ${describe(queries[wrong])}, not a string`);
    }
    let k = this.topkDefault;
    if (topk !== undefined && topk !== null) {
      if (typeof topk !== "number" || !Number.isInteger(topk) || topk < 1 || topk > this.topkMax) {
        throw new HttpError(
          400,
          "bad_topk",
          `"topk" must be an integer from 1 to ${this.topkMax}, not ${JSON.stringify(topk)}`,
        );
      }
      k = topk;
    }
    if (return_scores !== undefined && return_scores !== null && typeof return_scores !== "boolean") {
      throw new HttpError(
        400,
        "bad_request",
        `"return_scores" must be true or false, not ${JSON.stringify(return_scores)}`,
      );
    }
    let tags: string[] = [];
    if (langs !== undefined && langs !== null) {
      if (!Array.isArray(langs) || langs.some((l) => typeof l !== "string" || !LANG_TAG.test(l))) {
        throw new HttpError(400, "bad_langs", '"langs" must be a list of language tags such as ["zh", "en"]');
      }
      tags = [...new Set(langs as string[])].sort();
    }
    return { queries: queries as string[], topk: k, returnScores: return_scores === true, langs: tags };
  }

  private health(): unknown {
    return {
      status: "ok",
      corpora: this.options.retriever.corpusIds,
      cache: { entries: this.cache.size, hits: this.cache.hits, misses: this.cache.misses },
      requests: this.stats,
      limits: {
        topkDefault: this.topkDefault,
        topkMax: this.topkMax,
        maxQueries: this.maxQueries,
        maxQueryChars: this.maxQueryChars,
        maxBodyBytes: this.maxBodyBytes,
      },
    };
  }

  private fail(res: http.ServerResponse, e: unknown): void {
    if (e instanceof HttpError) {
      this.stats.errors4xx++;
      // The rest of an oversized body is not read: close the connection rather than drain it.
      const headers = e.status === 413 ? { ...e.headers, connection: "close" } : e.headers;
      this.send(res, e.status, { error: e.message, code: e.code }, false, headers);
      return;
    }
    if (res.destroyed || res.writableEnded) return;
    this.stats.errors5xx++;
    const message = e instanceof Error ? e.message : String(e);
    this.log(`retrieval server: internal error: ${e instanceof Error && e.stack ? e.stack : message}`);
    this.send(res, 500, { error: `Internal error: ${message}`, code: "internal" });
  }

  private send(
    res: http.ServerResponse,
    status: number,
    body: unknown,
    headOnly = false,
    headers: Record<string, string> = {},
  ): void {
    if (res.headersSent || res.destroyed) return;
    const payload = Buffer.from(JSON.stringify(body), "utf8");
    res.writeHead(status, {
      ...headers,
      "content-type": "application/json; charset=utf-8",
      "content-length": String(payload.length),
    });
    res.end(headOnly ? undefined : payload);
  }
}

function toItem(hit: SearchHit): RetrievedItem {
  const headword = oneLine(hit.headword);
  const gloss = oneLine(hit.gloss);
  const item: RetrievedItem = {
    id: hit.id,
    text: `${headword} — ${gloss}`,
    score: hit.score,
    lang: hit.lang,
    source: hit.source,
    match: hit.match,
    headword: hit.headword,
    gloss: hit.gloss,
    document: { id: hit.id, contents: `${headword}\n${gloss}` },
  };
  if (hit.tier !== undefined) item.tier = hit.tier;
  if (hit.online) item.online = true;
  if (hit.reasons?.length) item.reasons = hit.reasons;
  if (hit.tags?.length) item.tags = hit.tags;
  return item;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return `a ${typeof value}`;
}
