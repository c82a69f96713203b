import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

/** One request the server saw. */
export interface HubRequest {
  method: string;
  /** Path and query, e.g. `/owner/name/resolve/main/config.json`. */
  url: string;
  /** The Range header, when sent. */
  range?: string;
  status: number;
}

export interface HubServerOptions {
  /** Model id (`owner/name`) → local folder whose files are served under `/<id>/resolve/<revision>/<file>`. */
  models: Record<string, string>;
}

/** Files stored with Git LFS on the hub: they carry X-Linked-Etag (sha256) and X-Linked-Size. */
const LFS = /\.(onnx|onnx_data|safetensors|bin)$/;
const CHUNK = 16 * 1024;

/**
 * A real HTTP server on 127.0.0.1 that serves model folders in the Hugging Face hub URL layout, with switches
 * for the failures a download must survive. Switches can be changed between requests.
 */
export class HubServer {
  readonly requests: HubRequest[] = [];
  /** Cut the connection after this many body bytes, once, on the next request for `file`. */
  cutOnce: { file: string; afterBytes: number } | undefined;
  /** Send this many body bytes of `file`, once, then keep the connection open without sending more. */
  stallOnce: { file: string; afterBytes: number } | undefined;
  /** Answer every request with the whole file (200), as servers without Range support do. */
  ignoreRange = false;
  /** Send a wrong X-Linked-Etag for these files. */
  wrongEtag = new Set<string>();
  /** Answer LFS files with a 302 to another path (relative Location), as the hub does with its CDN. */
  redirectLfs = false;

  private server: http.Server | undefined;
  private readonly hashes = new Map<string, string>();

  private constructor(private readonly options: HubServerOptions) {}

  static async start(options: HubServerOptions): Promise<HubServer> {
    const hub = new HubServer(options);
    const server = http.createServer((req, res) => {
      hub.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(err));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    hub.server = server;
    return hub;
  }

  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  get url(): string {
    const address = this.server?.address() as AddressInfo | null;
    if (!address) throw new Error("hub server is not listening");
    return `http://127.0.0.1:${address.port}`;
  }

  /** Requests for one file (by its path inside the model folder), redirect targets included. */
  requestsFor(file: string): HubRequest[] {
    return this.requests.filter((r) => r.url.split("?")[0]?.endsWith(`/${file}`));
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const record: HubRequest = { method: req.method ?? "GET", url: req.url ?? "/", status: 0 };
    if (typeof req.headers.range === "string") record.range = req.headers.range;
    this.requests.push(record);
    const reply = (status: number, headers: http.OutgoingHttpHeaders = {}, body?: string) => {
      record.status = status;
      res.writeHead(status, headers);
      res.end(body);
    };

    const url = new URL(req.url ?? "/", "http://hub");
    const target = this.resolve(url.pathname);
    if (!target) return reply(404, { "Content-Type": "text/plain" }, "Entry not found");
    const { modelId, file, fromCdn } = target;
    const folder = this.options.models[modelId];
    const local = folder ? path.join(folder, ...file.split("/")) : undefined;
    const stat = local ? await fs.stat(local).catch(() => undefined) : undefined;
    if (!local || !stat?.isFile()) return reply(404, { "Content-Type": "text/plain" }, "Entry not found");

    const lfs = LFS.test(file);
    const sha = lfs ? await this.sha256(local) : undefined;
    const linked: http.OutgoingHttpHeaders = {};
    if (lfs && !fromCdn) {
      linked["X-Linked-Etag"] = `"${this.wrongEtag.has(file) ? "0".repeat(64) : sha}"`;
      linked["X-Linked-Size"] = String(stat.size);
    }
    if (lfs && !fromCdn && this.redirectLfs) {
      return reply(302, { ...linked, Location: `/cdn/${modelId}/${file}?expires=1` });
    }

    const data = await fs.readFile(local);
    let start = 0;
    let status = 200;
    const headers: http.OutgoingHttpHeaders = {
      ...linked,
      "Content-Type": "application/octet-stream",
      "Accept-Ranges": "bytes",
      ETag: `"${sha ?? createHash("sha1").update(data).digest("hex")}"`,
    };
    const range = /^bytes=(\d+)-$/.exec(record.range ?? "");
    if (range && !this.ignoreRange) {
      start = Number(range[1]);
      if (start >= data.length) {
        return reply(416, { "Content-Range": `bytes */${data.length}` });
      }
      status = 206;
      headers["Content-Range"] = `bytes ${start}-${data.length - 1}/${data.length}`;
    }
    const body = data.subarray(start);
    headers["Content-Length"] = String(body.length);
    record.status = status;
    res.writeHead(status, headers);

    const cut = this.cutOnce?.file === file ? this.cutOnce : undefined;
    const stall = this.stallOnce?.file === file ? this.stallOnce : undefined;
    if (cut) this.cutOnce = undefined;
    if (stall) this.stallOnce = undefined;
    const limit = cut?.afterBytes ?? stall?.afterBytes ?? body.length;
    for (let at = 0; at < Math.min(limit, body.length); at += CHUNK) {
      const chunk = body.subarray(at, Math.min(at + CHUNK, limit, body.length));
      if (!res.write(chunk)) await new Promise((resolve) => res.once("drain", resolve));
    }
    if (cut && limit < body.length) {
      await new Promise<void>((resolve) => res.write("", () => resolve()));
      res.socket?.destroy();
      return;
    }
    if (stall && limit < body.length) return; // hold the connection open
    res.end();
  }

  private resolve(pathname: string): { modelId: string; file: string; fromCdn: boolean } | undefined {
    const parts = pathname.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] === "cdn" && parts.length >= 4) {
      return { modelId: `${parts[1]}/${parts[2]}`, file: parts.slice(3).join("/"), fromCdn: true };
    }
    if (parts.length >= 5 && parts[2] === "resolve") {
      return { modelId: `${parts[0]}/${parts[1]}`, file: parts.slice(4).join("/"), fromCdn: false };
    }
    return undefined;
  }

  private async sha256(file: string): Promise<string> {
    let hash = this.hashes.get(file);
    if (!hash) {
      hash = createHash("sha256")
        .update(await fs.readFile(file))
        .digest("hex");
      this.hashes.set(file, hash);
    }
    return hash;
  }
}
