import { createHash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import http from "node:http";
import https from "node:https";
import path from "node:path";
import { PolicyError } from "./types";

/** ONNX weight file suffix per dtype, as @huggingface/transformers names them (`onnx/model<suffix>.onnx`). */
const DTYPE_SUFFIX: Record<string, string> = {
  fp32: "",
  fp16: "_fp16",
  q8: "_quantized",
  int8: "_int8",
  uint8: "_uint8",
  q4: "_q4",
  q4f16: "_q4f16",
  bnb4: "_bnb4",
};

/** The `onnx/model<suffix>.onnx` suffix for a dtype; throws PolicyError("config") for an unknown one. */
export function onnxFileSuffix(dtype: string | undefined): string {
  const suffix = DTYPE_SUFFIX[dtype || "fp32"];
  if (suffix === undefined) {
    throw new PolicyError(
      "config",
      `Unknown model dtype "${dtype}"; use one of ${Object.keys(DTYPE_SUFFIX).join(", ")} (glossa.policy.dtype).`,
    );
  }
  return suffix;
}

/** The files a decoder-only model needs, relative to the model folder. */
export function modelFiles(dtype: string | undefined): { required: string[]; optional: string[] } {
  const suffix = onnxFileSuffix(dtype);
  return {
    required: ["config.json", "tokenizer.json", "tokenizer_config.json", `onnx/model${suffix}.onnx`],
    optional: ["generation_config.json", `onnx/model${suffix}.onnx_data`],
  };
}

/** transformers.js refuses more external data chunks than this (its MAX_EXTERNAL_DATA_CHUNKS). */
const MAX_EXTERNAL_DATA_CHUNKS = 100;

/**
 * The external weight files a model's config.json declares for the decoder of this dtype, as
 * @huggingface/transformers reads them: `transformers.js_config.use_external_data_format` is `true` (one
 * file), a count, or an object keyed by ONNX file name (`model_q4.onnx`) or base name (`model`). Chunks
 * are `onnx/model<suffix>.onnx_data`, then `…onnx_data_1`, `…onnx_data_2`. Models over 2 GB are published
 * this way, and each chunk is required.
 */
export function externalDataFiles(config: unknown, dtype: string | undefined): string[] {
  const onnxName = `model${onnxFileSuffix(dtype)}.onnx`;
  const jsConfig = (config as { "transformers.js_config"?: { use_external_data_format?: unknown } } | null)?.[
    "transformers.js_config"
  ];
  const setting = jsConfig?.use_external_data_format;
  let chunks = 0;
  if (setting && typeof setting === "object") {
    const byName = setting as Record<string, unknown>;
    chunks = Number(byName[onnxName] ?? byName.model ?? 0);
  } else if (setting !== undefined && setting !== null) {
    chunks = Number(setting);
  }
  if (!Number.isInteger(chunks) || chunks < 0 || chunks > MAX_EXTERNAL_DATA_CHUNKS) {
    throw new PolicyError(
      "model-load",
      `config.json declares ${String(chunks)} external data files for ${onnxName}; expected a whole number from 0 to ${MAX_EXTERNAL_DATA_CHUNKS}.`,
    );
  }
  return Array.from({ length: chunks }, (_, i) => `onnx/${onnxName}_data${i === 0 ? "" : `_${i}`}`);
}

/** The external data files `<folder>/config.json` declares (none when it has no config.json yet). */
export async function declaredExternalData(folder: string, dtype: string | undefined): Promise<string[]> {
  let text: string;
  try {
    text = await fs.readFile(path.join(folder, "config.json"), "utf8");
  } catch {
    return [];
  }
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (err) {
    throw new PolicyError("model-load", `${path.join(folder, "config.json")} is not valid JSON: ${String(err)}`, err);
  }
  return externalDataFiles(config, dtype);
}

export interface DownloadProgress {
  /** Path of the file inside the model folder, e.g. `onnx/model_quantized.onnx`. */
  file: string;
  /** Bytes of this file on disk so far (including a resumed part). */
  bytes: number;
  /** Size of this file when the server says it. */
  total?: number;
}

export interface EnsureModelOptions {
  /** Hub model id, `owner/name`. */
  modelId: string;
  /** Folder that holds downloaded models; the model goes into `<storageDir>/<owner>--<name>[@revision]`. */
  storageDir: string;
  /** Default `https://huggingface.co`; files are fetched from `<hubUrl>/<modelId>/resolve/<revision>/<file>`. */
  hubUrl?: string;
  /** Default `main`. */
  revision?: string;
  /** Selects the ONNX file (`fp32` → model.onnx, `q8` → model_quantized.onnx, ...). Default fp32. */
  dtype?: string;
  onProgress?: (progress: DownloadProgress) => void;
  /** Cancels the download; the partial file is kept and resumed next time. */
  signal?: AbortSignal;
  /** Milliseconds without any data before a connection counts as lost. Default 30 000. */
  idleTimeoutMs?: number;
  /**
   * How to get going without the hub, ending the "cannot reach" message (e.g. the CLI names its flags).
   * Default: "point glossa.policy.modelPath at a local model folder or configure an endpoint".
   */
  hint?: string;
}

const MANIFEST = ".glossa-download.json";
const MAX_REDIRECTS = 10;
const MAX_ATTEMPTS = 4;
const LFS_SHA256 = /^[0-9a-f]{64}$/;

interface Manifest {
  modelId: string;
  revision: string;
  files: string[];
  missing: string[];
}

/** Downloads in progress, by folder, so that two callers never write the same partial files. */
const inFlight = new Map<string, Promise<string>>();

/** The folder a model is (or will be) stored in. */
export function modelFolder(storageDir: string, modelId: string, revision = "main"): string {
  const name = modelId.replace(/\//g, "--") + (revision === "main" ? "" : `@${revision.replace(/[^\w.-]/g, "_")}`);
  return path.join(storageDir, name);
}

/**
 * Makes sure a hub model is on disk and returns its local folder. Files already complete are not fetched again;
 * a folder whose download finished is used without any network access.
 */
export function ensureModel(options: EnsureModelOptions): Promise<string> {
  if (!/^[\w.-]+\/[\w.-]+$/.test(options.modelId) || options.modelId.includes("..")) {
    return Promise.reject(
      new PolicyError(
        "config",
        `"${options.modelId}" is not a hub model id (owner/name); check glossa.policy.modelId.`,
      ),
    );
  }
  const folder = modelFolder(options.storageDir, options.modelId, options.revision ?? "main");
  const running = inFlight.get(folder);
  if (running) return running;
  const job = download(folder, options).finally(() => inFlight.delete(folder));
  inFlight.set(folder, job);
  return job;
}

async function download(folder: string, options: EnsureModelOptions): Promise<string> {
  const revision = options.revision ?? "main";
  const { required, optional } = modelFiles(options.dtype);
  const wanted = [...required, ...optional];

  const manifest = await readManifest(folder);
  if (manifest && manifest.modelId === options.modelId && manifest.revision === revision) {
    const settled = new Set([...manifest.files, ...manifest.missing]);
    const declared = await declaredExternalData(folder, options.dtype);
    const complete = [...wanted, ...declared].every((f) => settled.has(f));
    if (complete && declared.every((f) => manifest.files.includes(f)) && (await allExist(folder, manifest.files))) {
      return folder;
    }
  }

  const hub = (options.hubUrl || "https://huggingface.co").replace(/\/+$/, "");
  const ctx: FileContext = {
    modelId: options.modelId,
    hub,
    signal: options.signal,
    onProgress: options.onProgress,
    idleTimeoutMs: options.idleTimeoutMs ?? 30_000,
    hint: options.hint ?? "point glossa.policy.modelPath at a local model folder or configure an endpoint",
  };
  const files: string[] = [];
  const missing: string[] = [];
  let unsettled = false;
  // config.json comes first: the external weight files it declares join the required ones.
  const addDeclared = async () => {
    for (const file of await declaredExternalData(folder, options.dtype)) {
      if (!required.includes(file)) required.push(file);
      if (!wanted.includes(file)) wanted.push(file);
    }
  };
  for (let i = 0; i < wanted.length; i++) {
    const file = wanted[i]!;
    const dest = path.join(folder, ...file.split("/"));
    if (await exists(dest)) {
      files.push(file);
      if (file === "config.json") await addDeclared();
      continue;
    }
    const url = `${hub}/${options.modelId}/resolve/${encodeURIComponent(revision)}/${file}`;
    let got: "ok" | "missing";
    try {
      got = await fetchFile(url, dest, file, ctx);
    } catch (err) {
      // Every required file is here but the hub is out of reach: use the folder, and ask again next time.
      if (optional.includes(file) && !required.includes(file) && unreachableErrors.has(err as object)) {
        unsettled = true;
        continue;
      }
      throw err;
    }
    if (got === "missing") {
      if (required.includes(file)) {
        throw new PolicyError(
          "download",
          `${options.modelId} has no ${file} at ${hostOf(hub)} (HTTP 404); choose a model with ONNX weights for this dtype, or point glossa.policy.modelPath at a local folder.`,
        );
      }
      missing.push(file);
    } else {
      files.push(file);
      if (file === "config.json") await addDeclared();
    }
  }
  if (!unsettled) {
    const done: Manifest = { modelId: options.modelId, revision, files, missing };
    await fs.writeFile(path.join(folder, MANIFEST), `${JSON.stringify(done, null, 2)}\n`);
  }
  return folder;
}

interface FileContext {
  modelId: string;
  hub: string;
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  idleTimeoutMs: number;
  hint: string;
}

/** What the server said about a file along the redirect chain. */
interface Remote {
  sha256?: string;
  size?: number;
}

/**
 * Downloads one file into `<dest>.part`, resuming from the part's size, verifies it and renames it to `dest`.
 * Returns "missing" on a 404.
 */
async function fetchFile(url: string, dest: string, file: string, ctx: FileContext): Promise<"ok" | "missing"> {
  await fs.mkdir(path.dirname(dest), { recursive: true });
  const part = `${dest}.part`;
  const remote: Remote = {};
  let attempt = 0;
  for (;;) {
    attempt++;
    throwIfAborted(ctx);
    const start = await sizeOf(part);
    let res: http.IncomingMessage;
    try {
      res = await request(url, start, remote, ctx);
    } catch (err) {
      if (err instanceof PolicyError) throw err;
      // A connection that fails before any response means the hub is unreachable: no point retrying.
      if (attempt === 1 || !isConnectionError(err)) throw unreachable(ctx, err);
      if (attempt >= MAX_ATTEMPTS) throw unreachable(ctx, err);
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
      continue;
    }

    if (res.statusCode === 404) {
      res.resume();
      await fs.rm(part, { force: true });
      return "missing";
    }
    if (res.statusCode === 416 && start > 0) {
      // The part is already as long as (or longer than) the file: start over.
      res.resume();
      await fs.rm(part, { force: true });
      continue;
    }
    if (res.statusCode !== 200 && res.statusCode !== 206) {
      res.resume();
      throw new PolicyError(
        "download",
        `Cannot download ${file} of ${ctx.modelId} from ${hostOf(ctx.hub)}: HTTP ${res.statusCode}${res.statusCode === 401 || res.statusCode === 403 ? " (the model may be gated or private)" : ""}.`,
      );
    }

    // 206 continues the part; a 200 (server ignored Range, or no part yet) restarts it.
    let offset = 0;
    if (res.statusCode === 206) {
      const range = /^bytes (\d+)-/.exec(String(res.headers["content-range"] ?? ""));
      if (!range || Number(range[1]) !== start) {
        res.resume();
        await fs.rm(part, { force: true });
        continue;
      }
      offset = start;
    }
    const length = Number(res.headers["content-length"]);
    const total = remote.size ?? (Number.isFinite(length) ? offset + length : undefined);
    let bytes = offset;
    ctx.onProgress?.({ file, bytes, total });
    // Written chunk by chunk through a file handle, so that whatever was received stays on disk for a resume.
    const handle = await fs.open(part, offset > 0 ? "a" : "w");
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        await handle.write(chunk);
        bytes += chunk.length;
        ctx.onProgress?.({ file, bytes, total });
      }
    } catch (err) {
      throwIfAborted(ctx);
      if (attempt >= MAX_ATTEMPTS) {
        throw new PolicyError(
          "download",
          `Download of ${file} of ${ctx.modelId} from ${hostOf(ctx.hub)} kept failing (${errorText(err)}); try again later, or point glossa.policy.modelPath at a local folder.`,
          err,
        );
      }
      continue; // resume from what reached the disk
    } finally {
      await handle.close();
    }
    if (total !== undefined && bytes < total) {
      if (attempt >= MAX_ATTEMPTS) {
        throw new PolicyError(
          "download",
          `Download of ${file} of ${ctx.modelId} ended early (${bytes} of ${total} bytes) several times; try again later.`,
        );
      }
      continue;
    }
    break;
  }

  await verify(part, file, remote, ctx);
  await fs.rename(part, dest);
  return "ok";
}

/** Checks size and sha256 (when the server gave them); deletes the part on a mismatch. */
async function verify(part: string, file: string, remote: Remote, ctx: FileContext): Promise<void> {
  const size = await sizeOf(part);
  if (remote.size !== undefined && size !== remote.size) {
    await fs.rm(part, { force: true });
    throw new PolicyError(
      "download",
      `Downloaded ${file} of ${ctx.modelId} has ${size} bytes, the hub says ${remote.size}; the file was deleted, try again.`,
    );
  }
  if (remote.sha256) {
    const actual = await sha256File(part);
    if (actual !== remote.sha256) {
      await fs.rm(part, { force: true });
      throw new PolicyError(
        "download",
        `Checksum mismatch for ${file} of ${ctx.modelId}: expected sha256 ${remote.sha256}, got ${actual}; the file was deleted, try again.`,
      );
    }
  }
}

/** Sends a GET (with Range when resuming), following redirects; collects X-Linked-Etag / X-Linked-Size. */
function request(url: string, start: number, remote: Remote, ctx: FileContext): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    let current: URL;
    try {
      current = new URL(url);
    } catch {
      reject(new PolicyError("config", `"${url}" is not a valid URL; check glossa.policy.hubUrl.`));
      return;
    }
    let hops = 0;
    const send = () => {
      const client = current.protocol === "https:" ? https : current.protocol === "http:" ? http : undefined;
      if (!client) {
        reject(new PolicyError("config", `Unsupported protocol in ${current.href}; check glossa.policy.hubUrl.`));
        return;
      }
      const headers: Record<string, string> = { "User-Agent": "glossa", "Accept-Encoding": "identity" };
      if (start > 0) headers.Range = `bytes=${start}-`;
      const req = client.get(current, { headers, signal: ctx.signal }, (res) => {
        noteRemote(res, remote);
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (status >= 300 && status < 400 && location) {
          res.resume();
          if (++hops > MAX_REDIRECTS) {
            reject(
              new PolicyError("download", `Too many redirects downloading ${ctx.modelId} from ${hostOf(ctx.hub)}.`),
            );
            return;
          }
          current = new URL(location, current);
          send();
          return;
        }
        res.setTimeout(ctx.idleTimeoutMs, () => res.destroy(timeoutError()));
        resolve(res);
      });
      req.setTimeout(ctx.idleTimeoutMs, () => req.destroy(timeoutError()));
      req.on("error", (err) => {
        if (ctx.signal?.aborted) reject(aborted(ctx));
        else reject(err);
      });
    };
    send();
  });
}

function noteRemote(res: http.IncomingMessage, remote: Remote): void {
  const etag = res.headers["x-linked-etag"];
  if (typeof etag === "string" && remote.sha256 === undefined) {
    const value = etag.replace(/^W\//, "").replace(/"/g, "").trim().toLowerCase();
    if (LFS_SHA256.test(value)) remote.sha256 = value;
  }
  const size = Number(res.headers["x-linked-size"]);
  if (remote.size === undefined && Number.isSafeInteger(size) && size >= 0) remote.size = size;
}

function timeoutError(): Error {
  return Object.assign(new Error("no data received in time"), { code: "ETIMEDOUT" });
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "ECONNABORTED",
]);

function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && CONNECTION_CODES.has(code);
}

/** Errors that mean "the hub could not be reached" (as opposed to a bad or missing file). */
const unreachableErrors = new WeakSet<object>();

function unreachable(ctx: FileContext, err: unknown): PolicyError {
  const error = new PolicyError(
    "download",
    `Cannot reach ${hostOf(ctx.hub)} to download ${ctx.modelId} (${errorText(err)}); ${ctx.hint}.`,
    err,
  );
  unreachableErrors.add(error);
  return error;
}

function aborted(ctx: FileContext): PolicyError {
  return new PolicyError("aborted", `Download of ${ctx.modelId} was cancelled; it resumes where it stopped next time.`);
}

function throwIfAborted(ctx: FileContext): void {
  if (ctx.signal?.aborted) throw aborted(ctx);
}

function errorText(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code !== "ERR_STREAM_PREMATURE_CLOSE") return code;
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0] ?? message;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await fs.stat(file)).size;
  } catch {
    return 0;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch {
    return false;
  }
}

async function allExist(folder: string, files: string[]): Promise<boolean> {
  for (const f of files) if (!(await exists(path.join(folder, ...f.split("/"))))) return false;
  return true;
}

async function readManifest(folder: string): Promise<Manifest | undefined> {
  try {
    const data = JSON.parse(await fs.readFile(path.join(folder, MANIFEST), "utf8")) as Partial<Manifest>;
    if (typeof data.modelId !== "string" || typeof data.revision !== "string") return undefined;
    if (!Array.isArray(data.files) || !Array.isArray(data.missing)) return undefined;
    return data as Manifest;
  } catch {
    return undefined;
  }
}

/** sha256 of a file, hex. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}
