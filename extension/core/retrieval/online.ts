import type { JsonlLruCache, LruCache } from "./cache";
import type { Retriever, SearchHit, SearchOptions } from "./types";

/**
 * The optional online tier: a web or wiki search behind a configured endpoint, off unless configured.
 *
 * Two kinds of endpoint:
 * - `searxng`: a SearxNG instance, base URL (e.g. `http://127.0.0.1:8888`); we call
 *   `GET <base>/search?q=…&format=json` (the instance must have the json format enabled, otherwise it
 *   answers 403) and read `results[]` `{title, url, content, score?}`. When the search is restricted to
 *   exactly one language, it is passed as `language=`.
 * - `mediawiki`: a MediaWiki action API URL (e.g. `https://en.wiktionary.org/w/api.php`); we call
 *   `action=query&list=search&srsearch=…&format=json&formatversion=2` and, with `extracts`, a second
 *   `action=query&prop=extracts&explaintext=1&exchars=…&pageids=…` for plain-text page extracts, used as the
 *   gloss instead of the search snippet when non-empty (TextExtracts caps plain-text extracts at 20 pages
 *   per request, which bounds topk for that request).
 *
 * Hits: `match: "online"`, `online: true`, `source` = the endpoint's host, `headword` = the title,
 * `gloss` = the snippet with HTML tags removed and entities decoded, `id` = `online:<host>:<url or page id>`.
 * Scores: SearxNG's own `score` when it sends one, otherwise 1/rank (MediaWiki sends none).
 * Language: a hit's `lang` is the one language the search was restricted to, else the provider's `lang`
 * (for a MediaWiki endpoint, the wiki's language from a host like `en.wiktionary.org`), else "und". A
 * provider with a known `lang` asked for other languages only returns nothing without a request.
 *
 * Failures are `OnlineSearchError`s (timeout, unreachable, HTTP status, malformed answer); a cancelled
 * search rejects with the caller's abort reason instead. `WithOnlineTier` turns online failures into
 * warnings so the offline tiers keep working.
 */
export type OnlineProviderKind = "searxng" | "mediawiki";

export type OnlineFailure = "timeout" | "unreachable" | "http" | "malformed";

export class OnlineSearchError extends Error {
  constructor(
    readonly failure: OnlineFailure,
    readonly endpoint: string,
    message: string,
  ) {
    super(`Online search (${endpoint}) failed: ${message}`);
    this.name = "OnlineSearchError";
  }
}

/** A cached answer: the hits, and how many were asked for (a shorter list is the whole answer). */
export interface CachedOnlineResult {
  topk: number;
  hits: SearchHit[];
}

export interface OnlineProviderConfig {
  kind: OnlineProviderKind;
  endpoint: string;
  /** Per request, including reading the body. Default 5000 ms. */
  timeoutMs?: number;
  /** MediaWiki only: fetch plain-text extracts as glosses. */
  extracts?: boolean;
  /** Characters per extract. Default 300. */
  extractChars?: number;
  /** Language of the results when the endpoint has one (a wiki); see the module comment. */
  lang?: string;
  /** Keyed by provider, languages and query; a repeat query within its TTL makes no request. */
  cache?: LruCache<CachedOnlineResult> | JsonlLruCache<CachedOnlineResult>;
  /** Larger answers are refused as malformed. Default 2 MiB. */
  maxResponseBytes?: number;
  userAgent?: string;
}

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_RESPONSE = 2 * 1024 * 1024;
const MAX_EXTRACT_PAGES = 20;

export class OnlineSearchProvider implements Retriever {
  readonly host: string;
  readonly corpusIds: readonly string[];
  /** HTTP requests sent (cache hits send none). */
  requests = 0;
  private readonly lang: string | undefined;

  constructor(private readonly config: OnlineProviderConfig) {
    let url: URL;
    try {
      url = new URL(config.endpoint);
    } catch {
      throw new Error(`The online search endpoint "${config.endpoint}" is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(`The online search endpoint must be http(s), not ${url.protocol}`);
    }
    this.host = url.host;
    this.corpusIds = [`online:${this.host}`];
    this.lang = config.lang ?? (config.kind === "mediawiki" ? wikiLanguage(url.hostname) : undefined);
  }

  async search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    options.signal?.throwIfAborted();
    const text = query.trim();
    if (!text || options.topk < 1) return [];
    const langs = options.langs?.length ? [...new Set(options.langs)].sort() : [];
    if (this.lang && langs.length && !langs.includes(this.lang)) return [];
    const key = [this.config.kind, this.config.endpoint, langs.join(","), text].join("\u0000");
    const cached = this.config.cache?.get(key);
    if (cached && (cached.topk >= options.topk || cached.hits.length < cached.topk)) {
      return cached.hits.slice(0, options.topk);
    }
    const lang = langs.length === 1 ? langs[0]! : (this.lang ?? "und");
    const hits =
      this.config.kind === "searxng"
        ? await this.searchSearxng(text, options, lang)
        : await this.searchMediaWiki(text, options, lang);
    this.config.cache?.set(key, { topk: options.topk, hits });
    return hits;
  }

  private async searchSearxng(query: string, options: SearchOptions, lang: string): Promise<SearchHit[]> {
    const base = this.config.endpoint.replace(/\/+$/, "");
    const url = new URL(base.endsWith("/search") ? base : `${base}/search`);
    url.searchParams.set("q", query);
    url.searchParams.set("format", "json");
    if (options.langs?.length === 1) url.searchParams.set("language", options.langs[0]!);
    const body = await this.getJson(url, options.signal);
    const results = (body as { results?: unknown }).results;
    if (!Array.isArray(results)) throw this.malformed("the answer has no results[] list");
    const hits: SearchHit[] = [];
    for (const [rank, item] of results.entries()) {
      if (hits.length >= options.topk) break;
      const r = item as { title?: unknown; url?: unknown; content?: unknown; score?: unknown };
      if (typeof r.title !== "string" || typeof r.url !== "string") continue;
      hits.push(
        this.hit(
          r.url,
          r.title,
          typeof r.content === "string" ? r.content : "",
          typeof r.score === "number" && Number.isFinite(r.score) ? r.score : 1 / (rank + 1),
          lang,
        ),
      );
    }
    return hits;
  }

  private async searchMediaWiki(query: string, options: SearchOptions, lang: string): Promise<SearchHit[]> {
    const limit = this.config.extracts ? Math.min(options.topk, MAX_EXTRACT_PAGES) : options.topk;
    const url = new URL(this.config.endpoint);
    for (const [k, v] of Object.entries({
      action: "query",
      list: "search",
      srsearch: query,
      srlimit: String(limit),
      format: "json",
      formatversion: "2",
    }))
      url.searchParams.set(k, v);
    const body = await this.getJson(url, options.signal);
    this.throwIfApiError(body);
    const found = (body as { query?: { search?: unknown } }).query?.search;
    if (!Array.isArray(found)) throw this.malformed("the answer has no query.search[] list");
    const pages = found.flatMap((item) => {
      const p = item as { title?: unknown; pageid?: unknown; snippet?: unknown };
      return typeof p.title === "string" && typeof p.pageid === "number"
        ? [{ title: p.title, pageid: p.pageid, snippet: typeof p.snippet === "string" ? p.snippet : "" }]
        : [];
    });
    const extracts = this.config.extracts && pages.length ? await this.fetchExtracts(pages, options.signal) : null;
    return pages
      .slice(0, options.topk)
      .map((p, rank) =>
        this.hit(
          `${this.config.endpoint}?curid=${p.pageid}`,
          p.title,
          extracts?.get(p.pageid) || p.snippet,
          1 / (rank + 1),
          lang,
        ),
      );
  }

  private async fetchExtracts(pages: Array<{ pageid: number }>, signal?: AbortSignal): Promise<Map<number, string>> {
    const url = new URL(this.config.endpoint);
    for (const [k, v] of Object.entries({
      action: "query",
      prop: "extracts",
      explaintext: "1",
      exchars: String(this.config.extractChars ?? 300),
      exlimit: String(MAX_EXTRACT_PAGES),
      pageids: pages.map((p) => p.pageid).join("|"),
      format: "json",
      formatversion: "2",
    }))
      url.searchParams.set(k, v);
    const body = await this.getJson(url, signal);
    this.throwIfApiError(body);
    const list = (body as { query?: { pages?: unknown } }).query?.pages;
    if (!Array.isArray(list)) throw this.malformed("the extracts answer has no query.pages[] list");
    const extracts = new Map<number, string>();
    for (const item of list) {
      const p = item as { pageid?: unknown; extract?: unknown };
      if (typeof p.pageid === "number" && typeof p.extract === "string") extracts.set(p.pageid, p.extract);
    }
    return extracts;
  }

  private hit(ref: string, title: string, snippet: string, score: number, lang: string): SearchHit {
    return {
      id: `online:${this.host}:${ref}`,
      headword: htmlToText(title),
      gloss: htmlToText(snippet),
      score,
      lang,
      source: this.host,
      match: "online",
      online: true,
    };
  }

  /** GET with the timeout and the caller's signal both reaching the request and the body read. */
  private async getJson(url: URL, signal?: AbortSignal): Promise<unknown> {
    const timeoutMs = this.config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimedOut()), timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    this.requests++;
    try {
      const response = await fetch(url, {
        signal: controller.signal,
        headers: { accept: "application/json", "user-agent": this.config.userAgent ?? "glossa" },
      });
      const text = await readBounded(response, this.config.maxResponseBytes ?? DEFAULT_MAX_RESPONSE);
      if (!response.ok) {
        throw new OnlineSearchError(
          "http",
          this.config.endpoint,
          `HTTP ${response.status} ${response.statusText}${text ? `: ${text.slice(0, 200)}` : ""}`,
        );
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw this.malformed(`the answer is not JSON (starts with ${JSON.stringify(text.slice(0, 60))})`);
      }
    } catch (e) {
      if (e instanceof OnlineSearchError) throw e;
      if (signal?.aborted) throw signal.reason;
      if (controller.signal.reason instanceof TimedOut) {
        throw new OnlineSearchError("timeout", this.config.endpoint, `no answer within ${timeoutMs} ms`);
      }
      if (e instanceof ResponseTooLarge) throw this.malformed(e.message);
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new OnlineSearchError(
        "unreachable",
        this.config.endpoint,
        cause?.code ? `${cause.code} ${cause.message ?? ""}`.trim() : (e as Error).message,
      );
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private throwIfApiError(body: unknown): void {
    const error = (body as { error?: { code?: unknown; info?: unknown } } | null)?.error;
    if (error) {
      throw new OnlineSearchError(
        "http",
        this.config.endpoint,
        `API error ${String(error.code)}: ${String(error.info)}`,
      );
    }
  }

  private malformed(message: string): OnlineSearchError {
    return new OnlineSearchError("malformed", this.config.endpoint, message);
  }
}

class TimedOut extends Error {}
class ResponseTooLarge extends Error {}

async function readBounded(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ResponseTooLarge(`the answer is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** "en.wiktionary.org" → "en"; hosts without a language label give undefined. */
function wikiLanguage(hostname: string): string | undefined {
  const label = hostname.split(".")[0] ?? "";
  return /^[a-z]{2,3}$/.test(label) && hostname.split(".").length >= 3 && label !== "www" ? label : undefined;
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  ndash: "–",
  mdash: "—",
  hellip: "…",
};

/** Snippet HTML to one line of text: tags dropped, character references decoded, whitespace collapsed. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, " ")
    .replace(/<br\s*\/?>|<\/(p|div|li)>/gi, " ")
    .replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) => {
      if (ref[0] === "#") {
        const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
        return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
      }
      return NAMED_ENTITIES[ref.toLowerCase()] ?? whole;
    })
    .replace(/\s+/g, " ")
    .trim();
}

export interface OnlineTierOptions {
  /**
   * "fallback" (default): query online only when offline found fewer than topk, and fill the free places.
   * "always": query online on every search and give online hits up to `onlineSlots` of the topk places.
   */
  when?: "always" | "fallback";
  /** Places kept for online hits under "always". Default: half of topk, rounded up. */
  onlineSlots?: number;
  /** Tier number given to online hits (offline hits keep theirs). Default 3, after the LcRL tiers. */
  tier?: number;
  /** Called with a one-line message when the online tier fails; the offline hits are returned regardless. */
  onWarning: (message: string) => void;
}

/**
 * Offline results first, then online ones, with online failures demoted to warnings: a dead endpoint
 * must never stop the agent. A cancelled search still rejects (cancelling is not a failure).
 */
export class WithOnlineTier implements Retriever {
  constructor(
    private readonly offline: Retriever,
    private readonly online: Retriever,
    private readonly options: OnlineTierOptions,
  ) {}

  get corpusIds(): readonly string[] {
    return [...this.offline.corpusIds, ...this.online.corpusIds];
  }

  async search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    const offline = await this.offline.search(query, options);
    if ((this.options.when ?? "fallback") === "fallback" && offline.length >= options.topk) return offline;
    let online: SearchHit[];
    try {
      online = await this.online.search(query, options);
    } catch (e) {
      if (options.signal?.aborted) throw e;
      const message = e instanceof Error ? e.message : String(e);
      this.options.onWarning(message);
      options.onWarning?.(`online search: ${message}`);
      return offline;
    }
    const ids = new Set(offline.map((h) => h.id));
    const tier = this.options.tier ?? 3;
    const fresh = online.filter((h) => !ids.has(h.id)).map((h) => ({ ...h, tier, online: true }));
    const reserved =
      (this.options.when ?? "fallback") === "always"
        ? Math.min(fresh.length, this.options.onlineSlots ?? Math.ceil(options.topk / 2))
        : 0;
    const kept = offline.slice(0, Math.max(0, options.topk - reserved));
    return [...kept, ...fresh.slice(0, options.topk - kept.length)];
  }
}
