import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Real HTTP servers on 127.0.0.1 that speak the SearxNG JSON API and the MediaWiki action API over a small
 * document set, with switches for the failures an online search must survive. They search for real: a
 * document matches when every query word occurs in its title or text (case-insensitive).
 */
abstract class SearchBackend {
  /** Every request's path and query, in order. */
  readonly requests: string[] = [];
  /** Wait this long before answering. */
  delayMs = 0;
  /** Answer every request with this HTTP status and an HTML error page. */
  failStatus: number | undefined;
  /** Answer 200 with a body that is not JSON. */
  garbage = false;
  private server: http.Server | undefined;
  private port = 0;

  protected abstract answer(url: URL): { status: number; body: unknown };

  protected async listen(): Promise<void> {
    const server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      this.requests.push(`${url.pathname}${url.search}`);
      const reply = () => {
        if (res.destroyed) return;
        if (this.failStatus !== undefined) {
          res.writeHead(this.failStatus, { "content-type": "text/html" });
          res.end("<html><body><h1>Internal Server Error</h1></body></html>");
          return;
        }
        if (this.garbage) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end('{"results": [{"title": "cut off');
          return;
        }
        const { status, body } = this.answer(url);
        res.writeHead(status, { "content-type": typeof body === "string" ? "text/html" : "application/json" });
        res.end(typeof body === "string" ? body : JSON.stringify(body));
      };
      if (this.delayMs > 0) setTimeout(reply, this.delayMs);
      else reply();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export interface WebDocument {
  title: string;
  url: string;
  /** HTML, as search engines return snippets. */
  content: string;
}

function plain(html: string): string {
  return html
    .replace(/<[^>]*>/g, "")
    .replace(/&[a-z#0-9]+;/gi, " ")
    .toLowerCase();
}

function matches(query: string, text: string): boolean {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return words.length > 0 && words.every((w) => text.includes(w));
}

/** `GET /search?q=…&format=json[&language=…]`; other formats are refused with 403, as SearxNG does by default. */
export class SearxngServer extends SearchBackend {
  private constructor(private readonly documents: WebDocument[]) {
    super();
  }

  static async start(documents: WebDocument[]): Promise<SearxngServer> {
    const server = new SearxngServer(documents);
    await server.listen();
    return server;
  }

  protected answer(url: URL): { status: number; body: unknown } {
    if (url.pathname !== "/search") return { status: 404, body: "<html>Not Found</html>" };
    if (url.searchParams.get("format") !== "json") return { status: 403, body: "<html>Forbidden</html>" };
    const query = url.searchParams.get("q") ?? "";
    const results = this.documents
      .map((doc) => ({ doc, text: plain(`${doc.title} ${doc.content}`) }))
      .filter(({ text }) => matches(query, text))
      .map(({ doc, text }, i) => ({
        ...doc,
        engine: "local",
        score: query
          .toLowerCase()
          .split(/\s+/)
          .reduce((sum, w) => sum + text.split(w).length - 1, 0),
        positions: [i + 1],
      }))
      .sort((a, b) => b.score - a.score);
    return {
      status: 200,
      body: {
        query,
        number_of_results: results.length,
        results,
        answers: [],
        suggestions: [],
        unresponsive_engines: [],
      },
    };
  }
}

export interface WikiPage {
  pageid: number;
  title: string;
  /** Plain text of the page; snippets and extracts are cut from it. */
  text: string;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * `GET /w/api.php?action=query&list=search&srsearch=…&format=json&formatversion=2` (snippets with
 * `<span class="searchmatch">` around matched words and HTML-escaped text, as MediaWiki sends them), and
 * `action=query&prop=extracts&pageids=…` (TextExtracts, plain text). Missing parameters get MediaWiki's
 * `{"error": {"code", "info"}}` answer with status 200.
 */
export class MediaWikiServer extends SearchBackend {
  /** Answer as a replicated wiki does when its database replicas lag (status 200, an error object). */
  lagged = false;

  private constructor(private readonly pages: WikiPage[]) {
    super();
  }

  static async start(pages: WikiPage[]): Promise<MediaWikiServer> {
    const server = new MediaWikiServer(pages);
    await server.listen();
    return server;
  }

  get apiUrl(): string {
    return `${this.origin}/w/api.php`;
  }

  protected answer(url: URL): { status: number; body: unknown } {
    if (url.pathname !== "/w/api.php") return { status: 404, body: "<html>Not Found</html>" };
    const p = url.searchParams;
    if (this.lagged) return apiError("maxlag", "Waiting for a database server: 5 seconds lagged.");
    if (p.get("format") !== "json") return { status: 200, body: "<html>MediaWiki API help</html>" };
    if (p.get("action") !== "query") return apiError("badvalue", 'Unrecognized value for parameter "action".');
    if (p.get("list") === "search") {
      const query = p.get("srsearch");
      if (!query) return apiError("nosrsearch", 'The "srsearch" parameter must be set.');
      const limit = Number(p.get("srlimit") ?? 10);
      const found = this.pages.filter((page) => matches(query, `${page.title} ${page.text}`.toLowerCase()));
      return {
        status: 200,
        body: {
          batchcomplete: true,
          query: {
            searchinfo: { totalhits: found.length },
            search: found.slice(0, limit).map((page) => ({
              ns: 0,
              title: page.title,
              pageid: page.pageid,
              size: page.text.length,
              wordcount: page.text.split(/\s+/).length,
              snippet: snippet(page.text, query),
              timestamp: "2024-01-01T00:00:00Z",
            })),
          },
        },
      };
    }
    if (p.get("prop") === "extracts") {
      const ids = (p.get("pageids") ?? "").split("|").map(Number);
      const chars = Number(p.get("exchars") ?? 1000);
      const pages = this.pages
        .filter((page) => ids.includes(page.pageid))
        .map((page) => ({
          pageid: page.pageid,
          ns: 0,
          title: page.title,
          extract: page.text.length > chars ? `${page.text.slice(0, chars)}…` : page.text,
        }));
      return { status: 200, body: { batchcomplete: true, query: { pages } } };
    }
    return apiError("badvalue", "Unsupported query.");
  }
}

function apiError(code: string, info: string): { status: number; body: unknown } {
  return { status: 200, body: { error: { code, info, docref: "See /w/api.php for API usage." } } };
}

function snippet(text: string, query: string): string {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return escapeHtml(text.slice(0, 200)).replace(/[\p{L}\p{N}]+/gu, (word) =>
    words.includes(word.toLowerCase()) ? `<span class="searchmatch">${word}</span>` : word,
  );
}
