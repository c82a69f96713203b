import { createHash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import path from "node:path";
import { HierarchicalNSW } from "hnswlib-node";
import { DEFAULT_HNSW_PARAMS, type HnswParams } from "./hnswParams";

export const DENSE_FORMAT_VERSION = 1;
const MANIFEST = "manifest.json";

export { DEFAULT_HNSW_PARAMS, type HnswParams };

/** What the vectors on disk were made from; compared with the current encoder and corpus before use. */
export interface DenseManifest {
  formatVersion: number;
  space: "cosine";
  encoderId: string;
  dimension: number;
  /** See `corpusFingerprint`: the corpus the finished index covers (of the checkpoint's target while partial). */
  corpusFingerprint: string;
  /**
   * Identifies the lexical index generation the passages were read from, when they were: a reader that
   * sees the same generation knows the fingerprint without reading every entry again.
   */
  sourceKey?: string;
  /** Live vectors (labels not marked deleted). */
  count: number;
  params: HnswParams;
  createdAt: string;
  updatedAt: string;
  /** False for a checkpoint of a build that has not finished; such an index is resumed, not searched. */
  complete: boolean;
  progress: { done: number; total: number };
  /** The index and ledger files of this generation, with what they must hash to. */
  files: {
    index: { name: string; bytes: number; sha256: string };
    ledger: { name: string; bytes: number; sha256: string };
  };
}

/** What a caller expects the index to match; any difference makes the index stale. */
export interface DenseExpectation {
  encoderId?: string;
  dimension?: number;
  corpusFingerprint?: string;
}

export type DenseIndexErrorCode = "missing" | "stale" | "corrupt" | "incomplete";

/**
 * An index that cannot be used as it is. `rebuild` says whether building it again fixes it (always, today):
 * the host shows the message with a "Rebuild" action instead of failing.
 */
export class DenseIndexError extends Error {
  override readonly name = "DenseIndexError";
  readonly rebuild = true;
  constructor(
    readonly code: DenseIndexErrorCode,
    message: string,
    readonly dir: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/** The ordinal's entry id and content hash, as indexed: lets a later build keep, reuse or replace each vector. */
export interface LedgerRow {
  id: string;
  hash: string;
}

/**
 * HNSW vectors (cosine space) labelled by entry ordinal, with the ledger of what each label holds. Saved as one
 * generation of files plus a manifest that is renamed into place last, so a reader sees the old index or the new
 * one, never a mix, and two writers cannot interleave their files.
 */
export class DenseIndex {
  private capacity: number;

  private constructor(
    private readonly hnsw: HierarchicalNSW,
    readonly dimension: number,
    readonly params: HnswParams,
    readonly ledger: Map<number, LedgerRow>,
    private createdAt: string,
  ) {
    this.capacity = hnsw.getMaxElements();
    hnsw.setEf(params.efSearch);
  }

  static create(dimension: number, params: Partial<HnswParams> = {}, capacity = 1024): DenseIndex {
    const full = { ...DEFAULT_HNSW_PARAMS, ...params };
    const hnsw = new HierarchicalNSW("cosine", dimension);
    hnsw.initIndex(Math.max(1, capacity), full.m, full.efConstruction, full.randomSeed);
    return new DenseIndex(hnsw, dimension, full, new Map(), new Date().toISOString());
  }

  /** Reads the manifest alone (no vectors): null when there is none. */
  static async readManifest(dir: string): Promise<DenseManifest | null> {
    const file = path.join(dir, MANIFEST);
    let text: string;
    try {
      text = await fs.readFile(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new DenseIndexError("corrupt", `Cannot read the dense index manifest ${file}: ${message(err)}`, dir, err);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new DenseIndexError(
        "corrupt",
        `The dense index manifest ${file} is not valid JSON; rebuild the index.`,
        dir,
        err,
      );
    }
    const m = value as Partial<DenseManifest>;
    if (
      typeof m.formatVersion !== "number" ||
      typeof m.encoderId !== "string" ||
      typeof m.dimension !== "number" ||
      typeof m.corpusFingerprint !== "string" ||
      typeof m.files?.index?.name !== "string" ||
      typeof m.files?.ledger?.name !== "string"
    ) {
      throw new DenseIndexError("corrupt", `The dense index manifest ${file} is incomplete; rebuild the index.`, dir);
    }
    return m as DenseManifest;
  }

  /** Why an index made under `manifest` cannot serve `expect`, or null when it can. */
  static staleness(manifest: DenseManifest, expect: DenseExpectation): string | null {
    if (manifest.formatVersion !== DENSE_FORMAT_VERSION) {
      return `format version ${manifest.formatVersion}, this version reads ${DENSE_FORMAT_VERSION}`;
    }
    if (expect.encoderId !== undefined && manifest.encoderId !== expect.encoderId) {
      return `built with encoder ${manifest.encoderId}, the current encoder is ${expect.encoderId}`;
    }
    if (expect.dimension !== undefined && manifest.dimension !== expect.dimension) {
      return `dimension ${manifest.dimension}, the encoder gives ${expect.dimension}`;
    }
    if (expect.corpusFingerprint !== undefined && manifest.corpusFingerprint !== expect.corpusFingerprint) {
      return "the corpus has changed since it was built";
    }
    return null;
  }

  /**
   * Loads an index after checking it against `expect` and the checksums in its manifest. Throws
   * DenseIndexError (missing, stale, corrupt, or incomplete unless `allowPartial`) rather than using it.
   */
  static async open(
    dir: string,
    expect: DenseExpectation = {},
    options: {
      allowPartial?: boolean;
      ledger?: boolean;
      /** Query-time candidate list size; default the one the index was built with. Not part of the index. */
      efSearch?: number;
    } = {},
  ): Promise<{ index: DenseIndex; manifest: DenseManifest }> {
    const manifest = await DenseIndex.readManifest(dir);
    if (!manifest) throw new DenseIndexError("missing", `No dense index in ${dir}; build it first.`, dir);
    const stale = DenseIndex.staleness(manifest, expect);
    if (stale) throw new DenseIndexError("stale", `The dense index in ${dir} is stale: ${stale}; rebuild it.`, dir);
    if (!manifest.complete && !options.allowPartial) {
      const { done, total } = manifest.progress;
      throw new DenseIndexError(
        "incomplete",
        `The dense index in ${dir} is a checkpoint (${done}/${total}); resume the build.`,
        dir,
      );
    }
    const indexFile = path.join(dir, manifest.files.index.name);
    const ledgerFile = path.join(dir, manifest.files.ledger.name);
    await verifyFile(dir, indexFile, manifest.files.index);
    const hnsw = new HierarchicalNSW("cosine", manifest.dimension);
    try {
      await hnsw.readIndex(indexFile);
    } catch (err) {
      throw new DenseIndexError(
        "corrupt",
        `Cannot read the dense index ${indexFile}: ${message(err)}; rebuild it.`,
        dir,
        err,
      );
    }
    const ledger = new Map<number, LedgerRow>();
    if (options.ledger !== false) {
      await verifyFile(dir, ledgerFile, manifest.files.ledger);
      const text = await fs.readFile(ledgerFile, "utf8");
      for (const line of text.split("\n")) {
        if (!line) continue;
        const [ordinal, id, hash] = line.split("\t");
        if (ordinal === undefined || id === undefined || hash === undefined) {
          throw new DenseIndexError("corrupt", `The dense index ledger ${ledgerFile} has a bad line; rebuild it.`, dir);
        }
        ledger.set(Number(ordinal), { id, hash });
      }
    }
    const params = options.efSearch ? { ...manifest.params, efSearch: options.efSearch } : manifest.params;
    const index = new DenseIndex(hnsw, manifest.dimension, params, ledger, manifest.createdAt);
    return { index, manifest };
  }

  /** Labels stored in the graph, deleted ones included. */
  get stored(): number {
    return this.hnsw.getCurrentCount();
  }

  /** Adds or replaces the vector of one ordinal. */
  upsert(ordinal: number, row: LedgerRow, vector: Float32Array): void {
    if (vector.length !== this.dimension) {
      throw new Error(`vector of dimension ${vector.length} for an index of dimension ${this.dimension}`);
    }
    if (this.stored >= this.capacity) {
      this.capacity = Math.ceil(this.capacity * 1.5) + 1024;
      this.hnsw.resizeIndex(this.capacity);
    }
    this.hnsw.addPoint(Array.from(vector), ordinal);
    this.ledger.set(ordinal, row);
  }

  /** Ensures room for `n` more vectors in one resize instead of many. */
  reserve(n: number): void {
    if (this.stored + n > this.capacity) {
      this.capacity = this.stored + n;
      this.hnsw.resizeIndex(this.capacity);
    }
  }

  remove(ordinal: number): void {
    if (!this.ledger.delete(ordinal)) return;
    this.hnsw.markDelete(ordinal);
  }

  /** The stored (unit-length) vector of an ordinal, so an unchanged text moved to another ordinal is not re-encoded. */
  vectorOf(ordinal: number): Float32Array {
    return Float32Array.from(this.hnsw.getPoint(ordinal));
  }

  setEfSearch(ef: number): void {
    this.hnsw.setEf(ef);
  }

  /** Nearest ordinals by cosine similarity (score = 1 − cosine distance), best first. */
  search(
    query: Float32Array,
    k: number,
    filter?: (ordinal: number) => boolean,
  ): Array<{ ordinal: number; score: number }> {
    const live = this.ledger.size > 0 ? this.ledger.size : this.stored;
    if (live === 0 || k <= 0) return [];
    const { neighbors, distances } = filter
      ? this.hnsw.searchKnn(Array.from(query), Math.min(k, this.stored), filter)
      : this.hnsw.searchKnn(Array.from(query), Math.min(k, this.stored));
    return neighbors.map((ordinal, i) => ({ ordinal, score: 1 - (distances[i] as number) }));
  }

  /**
   * Records the lexical generation a finished index's passages match (its files are unchanged), unless
   * another save replaced the manifest meanwhile.
   */
  static async recordSource(dir: string, manifest: DenseManifest, sourceKey: string): Promise<DenseManifest> {
    const current = await DenseIndex.readManifest(dir);
    if (!current || current.files.index.name !== manifest.files.index.name) return manifest;
    const updated: DenseManifest = { ...current, sourceKey };
    await writeDurably(path.join(dir, MANIFEST), `${JSON.stringify(updated, null, 2)}\n`);
    return updated;
  }

  /** Writes a new generation of files, then the manifest by rename; removes the generation it replaced. */
  async save(
    dir: string,
    about: {
      encoderId: string;
      corpusFingerprint: string;
      complete: boolean;
      progress: { done: number; total: number };
      sourceKey?: string;
    },
  ): Promise<DenseManifest> {
    await fs.mkdir(dir, { recursive: true });
    const previous = await DenseIndex.readManifest(dir).catch(() => null);
    const generation = `${Date.now().toString(36)}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const indexName = `index.${generation}.hnsw`;
    const ledgerName = `ledger.${generation}.tsv`;
    const indexFile = path.join(dir, indexName);
    const ledgerFile = path.join(dir, ledgerName);
    await this.hnsw.writeIndex(`${indexFile}.tmp`);
    await fs.rename(`${indexFile}.tmp`, indexFile);
    const rows: string[] = [];
    for (const [ordinal, { id, hash }] of this.ledger) rows.push(`${ordinal}\t${id}\t${hash}\n`);
    await writeDurably(ledgerFile, rows.join(""));
    const now = new Date().toISOString();
    const manifest: DenseManifest = {
      formatVersion: DENSE_FORMAT_VERSION,
      space: "cosine",
      encoderId: about.encoderId,
      dimension: this.dimension,
      corpusFingerprint: about.corpusFingerprint,
      ...(about.sourceKey ? { sourceKey: about.sourceKey } : {}),
      count: this.ledger.size,
      params: this.params,
      createdAt: this.createdAt,
      updatedAt: now,
      complete: about.complete,
      progress: about.progress,
      files: {
        index: { name: indexName, ...(await describeFile(indexFile)) },
        ledger: { name: ledgerName, ...(await describeFile(ledgerFile)) },
      },
    };
    await writeDurably(path.join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    if (previous) {
      for (const old of [previous.files.index.name, previous.files.ledger.name]) {
        if (old !== indexName && old !== ledgerName) await fs.rm(path.join(dir, old), { force: true });
      }
    }
    await removeAbandonedGenerations(dir, new Set([indexName, ledgerName]));
    return manifest;
  }
}

/** Generation files (and their temporary files): `index.<time>-<pid>-<random>.hnsw`, `ledger.….tsv`. */
const GENERATION_FILE = /^(?:index|ledger)\.[a-z0-9]+-(\d+)-[a-z0-9]+\.(?:hnsw|tsv)(?:\.(?:\d+\.)?tmp)?$/;
/** A generation file untouched this long is no save in progress, whoever wrote it. */
export const ABANDONED_AFTER_MS = 10 * 60_000;

/**
 * Removes generation files no manifest names that no save can still be writing: their writer's process
 * has ended, or they have not changed for ABANDONED_AFTER_MS. These are left by a save that lost a race
 * with another process's save, or by a process killed while saving. A save in progress elsewhere keeps
 * its files: its process is alive and its files are fresh.
 */
export async function removeAbandonedGenerations(dir: string, current: ReadonlySet<string>): Promise<string[]> {
  const removed: string[] = [];
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return removed;
  }
  const now = Date.now();
  for (const name of names) {
    const match = GENERATION_FILE.exec(name);
    if (!match || current.has(name) || current.has(name.replace(/\.(?:\d+\.)?tmp$/, ""))) continue;
    const file = path.join(dir, name);
    const stat = await fs.stat(file).catch(() => null);
    if (!stat) continue;
    if (processAlive(Number(match[1])) && now - stat.mtimeMs < ABANDONED_AFTER_MS) continue;
    await fs.rm(file, { force: true });
    removed.push(name);
  }
  return removed;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function writeDurably(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  const handle = await fs.open(tmp, "w");
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, file);
}

async function describeFile(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    bytes += (chunk as Buffer).length;
    hash.update(chunk as Buffer);
  }
  return { bytes, sha256: hash.digest("hex") };
}

async function verifyFile(dir: string, file: string, want: { bytes: number; sha256: string }): Promise<void> {
  let got: { bytes: number; sha256: string };
  try {
    got = await describeFile(file);
  } catch (err) {
    throw new DenseIndexError("corrupt", `Cannot read ${file}: ${message(err)}; rebuild the dense index.`, dir, err);
  }
  if (got.bytes !== want.bytes || got.sha256 !== want.sha256) {
    throw new DenseIndexError(
      "corrupt",
      `${file} does not match its manifest (${got.bytes} bytes, expected ${want.bytes}; checksum ${got.sha256 === want.sha256 ? "equal" : "differs"}); rebuild the dense index.`,
      dir,
    );
  }
}

function message(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";
}
