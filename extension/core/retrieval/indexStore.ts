import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { crc32 } from "node:zlib";
import { type CorpusSpec, corpusId, detectFormat, readCorpus, writeEntriesJsonl } from "./corpora";
import type { ImportReport } from "./importers/report";
import { FrozenLexicalIndex } from "./lexical";
import { LexicalIndexBuilder } from "./lexicalBuilder";
import { LEXICAL_FORMAT_VERSION, lexicalFileNames, lexicalFiles, wrapLexicalFiles } from "./lexicalFormat";
import type { CorpusInfo } from "./types";

/**
 * An index folder: each build is a complete generation folder (`gen-…`) written under a temporary
 * name and renamed into place, and the `CURRENT` file (replaced by rename) names the generation
 * readers load, so a reader never sees a half-written index. Writers take `.lock` (created
 * exclusively, holding pid and host; a lock whose process is gone is taken over). Each corpus's
 * entries are kept as JSONL beside the index, so a changed source file is re-parsed alone and the
 * index is rebuilt from the stored entries of the others.
 */

/** Version of the folder layout together with the lexical files' layout. */
export const INDEX_FORMAT_VERSION = 1000 + LEXICAL_FORMAT_VERSION;

export interface IndexFile {
  name: string;
  size: number;
  crc32: number;
}

export interface StoredCorpus extends CorpusInfo {
  /** The corpus's entries as Glossa JSONL, relative to the generation folder. */
  entriesFile: IndexFile;
}

export interface IndexManifest {
  formatVersion: number;
  corpora: StoredCorpus[];
  entryCount: number;
  /** The lexical index files, checked (size and CRC-32) on every load. */
  files: IndexFile[];
  createdAt: string;
}

/**
 * Identifies a lexical index generation by its content (format version and every file's size and
 * CRC-32): equal keys mean the same entries in the same order.
 */
export function lexicalSourceKey(manifest: IndexManifest): string {
  const files = manifest.files.map((f) => [f.name, f.size, f.crc32]).sort();
  return createHash("sha256")
    .update(JSON.stringify([manifest.formatVersion, manifest.entryCount, files]))
    .digest("hex")
    .slice(0, 32);
}

/** The index cannot be used as it is on disk; it can be rebuilt from its sources. */
export class IndexCorruptError extends Error {
  override readonly name = "IndexCorruptError";

  constructor(
    readonly indexDir: string,
    readonly reason: string,
  ) {
    super(`The index at ${indexDir} cannot be used: ${reason}. It can be rebuilt from its source files.`);
  }
}

/** Another process holds the index's write lock for longer than this process would wait. */
export class IndexLockedError extends Error {
  override readonly name = "IndexLockedError";
}

export interface UpdateResult {
  /** Corpora parsed from their source files in this update. */
  imported: string[];
  /** Corpora whose source files had not changed (not parsed again). */
  unchanged: string[];
  /** Corpora dropped from the index because an update with `prune` no longer named them. */
  removed: string[];
  reports: ImportReport[];
  /** False when nothing had changed and the index was left as it was. */
  rebuilt: boolean;
}

export interface IndexStoreOptions {
  /** How long a writer waits for another writer's lock (default 10 minutes). */
  lockTimeoutMs?: number;
  /** Called with progress text during an update. */
  onProgress?: (message: string) => void;
}

const CURRENT = "CURRENT";
const LOCK = ".lock";
const MANIFEST = "manifest.json";

export class IndexStore {
  constructor(
    readonly root: string,
    private readonly options: IndexStoreOptions = {},
  ) {
    this.root = resolve(root);
  }

  /** The current manifest, or null when no index has been built here; IndexCorruptError when unreadable. */
  async manifest(): Promise<IndexManifest | null> {
    const generation = await this.currentGeneration();
    return generation ? this.readManifest(generation) : null;
  }

  /** Loads the current lexical index, verifying every file; IndexCorruptError for anything unusable. */
  async load(): Promise<{ index: FrozenLexicalIndex; manifest: IndexManifest }> {
    for (let attempt = 0; ; attempt++) {
      const generation = await this.currentGeneration();
      if (!generation) throw new IndexCorruptError(this.root, "no index has been built here yet");
      try {
        return await this.loadGeneration(generation);
      } catch (error) {
        // A writer may have replaced and removed this generation while it was being read.
        if (attempt === 0 && error instanceof IndexCorruptError && (await this.currentGeneration()) !== generation) {
          continue;
        }
        throw error;
      }
    }
  }

  /**
   * Imports the given corpora (re-parsing only those whose source file changed) and rebuilds the
   * index when anything changed. Corpora already in the store and not named here are kept, unless
   * `prune` is set: then the named corpora are exactly what the index holds afterwards.
   */
  async update(
    specs: CorpusSpec[],
    { force = false, prune = false }: { force?: boolean; prune?: boolean } = {},
  ): Promise<UpdateResult> {
    await mkdir(this.root, { recursive: true });
    const release = await this.lock();
    try {
      return await this.updateLocked(specs, force, prune);
    } finally {
      await release();
    }
  }

  private async updateLocked(specs: CorpusSpec[], force: boolean, prune: boolean): Promise<UpdateResult> {
    await this.removeTemporaries();
    const generation = await this.currentGeneration();
    let previous: IndexManifest | null = null;
    if (generation && !force) {
      try {
        previous = await this.readManifest(generation);
      } catch (error) {
        if (!(error instanceof IndexCorruptError)) throw error;
      }
    }
    const plans: Array<{ spec: CorpusSpec; id: string; fingerprint: CorpusInfo["fingerprint"]; kept?: StoredCorpus }> =
      [];
    for (const spec of specs) {
      const id = corpusId(spec);
      const file = resolve(spec.path);
      const info = await stat(file);
      const old = previous?.corpora.find((c) => c.id === id && c.file === file);
      const sameStat = old && old.fingerprint.size === info.size && old.fingerprint.mtimeMs === info.mtimeMs;
      const sha256 = sameStat ? old.fingerprint.sha256 : await sha256Of(file);
      const fingerprint = { size: info.size, mtimeMs: info.mtimeMs, sha256 };
      const unchanged = old && old.fingerprint.size === info.size && old.fingerprint.sha256 === sha256;
      plans.push({ spec: { ...spec, path: file }, id, fingerprint, ...(unchanged ? { kept: old } : {}) });
    }
    const named = new Set(plans.map((p) => p.id));
    const unnamed = (previous?.corpora ?? []).filter((c) => !named.has(c.id));
    const others = prune ? [] : unnamed;
    const removed = prune ? unnamed.map((c) => c.id) : [];
    if (previous && plans.every((p) => p.kept) && removed.length === 0) {
      return { imported: [], unchanged: plans.map((p) => p.id), removed, reports: [], rebuilt: false };
    }

    const tmp = join(this.root, `.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
    await mkdir(join(tmp, "corpora"), { recursive: true });
    try {
      const corpora: StoredCorpus[] = [];
      const reports: ImportReport[] = [];
      for (const corpus of others) corpora.push(await this.keep(corpus, generation!, tmp));
      for (const plan of plans) {
        if (plan.kept) {
          corpora.push(await this.keep({ ...plan.kept, fingerprint: plan.fingerprint }, generation!, tmp));
          continue;
        }
        this.options.onProgress?.(`importing ${plan.id} from ${plan.spec.path}`);
        const format = plan.spec.format ?? (await detectFormat(plan.spec.path));
        const name = `corpora/${encodeURIComponent(plan.id)}.jsonl`;
        const report = await writeEntriesJsonl({ ...plan.spec, format, id: plan.id }, join(tmp, name));
        reports.push(report);
        corpora.push({
          id: plan.id,
          file: plan.spec.path,
          format,
          fingerprint: plan.fingerprint,
          entries: report.imported,
          entriesFile: await describe(tmp, name),
        });
      }

      this.options.onProgress?.("building the lexical index");
      const builder = new LexicalIndexBuilder();
      for (const corpus of corpora) {
        await readCorpus({ path: join(tmp, corpus.entriesFile.name), format: "jsonl", id: corpus.id }, (entry) =>
          builder.add(entry, corpus.id),
        );
      }
      const { arrays, meta } = builder.finish({ release: true });
      const files: IndexFile[] = [];
      for (const { name, data } of lexicalFiles(arrays, meta)) {
        await writeDurably(join(tmp, name), data);
        files.push({ name, size: data.byteLength, crc32: crc32(data) });
      }
      const manifest: IndexManifest = {
        formatVersion: INDEX_FORMAT_VERSION,
        corpora,
        entryCount: meta.docCount,
        files,
        createdAt: new Date().toISOString(),
      };
      await writeDurably(join(tmp, MANIFEST), Buffer.from(JSON.stringify(manifest, null, 1)));
      const next = `gen-${Date.now()}-${process.pid}`;
      await rename(tmp, join(this.root, next));
      await writeDurably(join(this.root, `${CURRENT}.tmp`), Buffer.from(next));
      await rename(join(this.root, `${CURRENT}.tmp`), join(this.root, CURRENT));
      await this.removeOldGenerations(next, generation);
      return {
        imported: plans.filter((p) => !p.kept).map((p) => p.id),
        unchanged: plans.filter((p) => p.kept).map((p) => p.id),
        removed,
        reports,
        rebuilt: true,
      };
    } catch (error) {
      await rm(tmp, { recursive: true, force: true });
      throw error;
    }
  }

  /** Carries an unchanged corpus's stored entries into the new generation (a hard link where possible). */
  private async keep(corpus: StoredCorpus, generation: string, tmp: string): Promise<StoredCorpus> {
    const from = join(this.root, generation, corpus.entriesFile.name);
    const to = join(tmp, corpus.entriesFile.name);
    try {
      await link(from, to);
    } catch {
      await copyFile(from, to);
    }
    return corpus;
  }

  private async currentGeneration(): Promise<string | null> {
    try {
      const name = (await readFile(join(this.root, CURRENT), "utf8")).trim();
      if (!/^gen-[\w-]+$/.test(name)) throw new IndexCorruptError(this.root, `${CURRENT} does not name a generation`);
      return name;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  private async readManifest(generation: string): Promise<IndexManifest> {
    const dir = join(this.root, generation);
    let manifest: IndexManifest;
    try {
      manifest = JSON.parse(await readFile(join(dir, MANIFEST), "utf8")) as IndexManifest;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new IndexCorruptError(dir, code === "ENOENT" ? `${MANIFEST} is missing` : `${MANIFEST} is not valid JSON`);
    }
    if (manifest.formatVersion !== INDEX_FORMAT_VERSION) {
      throw new IndexCorruptError(
        dir,
        `it was written in format version ${manifest.formatVersion}, this version of Glossa reads ${INDEX_FORMAT_VERSION}`,
      );
    }
    if (!Array.isArray(manifest.files) || !Array.isArray(manifest.corpora)) {
      throw new IndexCorruptError(dir, `${MANIFEST} lacks its file or corpus list`);
    }
    return manifest;
  }

  private async loadGeneration(generation: string): Promise<{ index: FrozenLexicalIndex; manifest: IndexManifest }> {
    const dir = join(this.root, generation);
    const manifest = await this.readManifest(generation);
    const listed = new Map(manifest.files.map((f) => [f.name, f]));
    const contents = new Map<string, Buffer>();
    await Promise.all(
      lexicalFileNames().map(async (name) => {
        const expected = listed.get(name);
        if (!expected) throw new IndexCorruptError(dir, `${MANIFEST} does not list ${name}`);
        let data: Buffer;
        try {
          data = await readFile(join(dir, name));
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          throw new IndexCorruptError(
            dir,
            code === "ENOENT" ? `${name} is missing` : `${name} cannot be read (${code})`,
          );
        }
        if (data.byteLength !== expected.size) {
          throw new IndexCorruptError(dir, `${name} is ${data.byteLength} bytes, the manifest says ${expected.size}`);
        }
        if (crc32(data) !== expected.crc32) throw new IndexCorruptError(dir, `${name} fails its checksum`);
        contents.set(name, data);
      }),
    );
    try {
      const { arrays, meta } = wrapLexicalFiles((name) => contents.get(name)!);
      const consistent =
        arrays.headwordOffsets.length === meta.docCount + 1 &&
        arrays.recordOffsets.length === meta.docCount + 1 &&
        arrays.docLength.length === meta.docCount &&
        arrays.postingStart.length === meta.termCount + 1 &&
        arrays.postingStart[meta.termCount] === arrays.postingDocs.length &&
        arrays.keyDocStart.length === meta.keyCount + 1;
      if (!consistent) throw new Error("its arrays disagree with its metadata");
      return { index: new FrozenLexicalIndex(arrays, meta), manifest };
    } catch (error) {
      if (error instanceof IndexCorruptError) throw error;
      throw new IndexCorruptError(dir, (error as Error).message);
    }
  }

  private async removeTemporaries(): Promise<void> {
    for (const name of await readdir(this.root)) {
      if (name.startsWith(".tmp-")) await rm(join(this.root, name), { recursive: true, force: true });
    }
  }

  /** Keeps the new generation and the one before it (a reader may still be loading that one). */
  private async removeOldGenerations(current: string, previous: string | null): Promise<void> {
    for (const name of await readdir(this.root)) {
      if (name.startsWith("gen-") && name !== current && name !== previous) {
        await rm(join(this.root, name), { recursive: true, force: true });
      }
    }
  }

  private async lock(): Promise<() => Promise<void>> {
    const path = join(this.root, LOCK);
    const token = `${process.pid}@${hostname()}#${randomBytes(6).toString("hex")}`;
    const deadline = Date.now() + (this.options.lockTimeoutMs ?? 600_000);
    let delay = 20;
    for (;;) {
      try {
        const handle = await open(path, "wx");
        await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname(), token, since: Date.now() }));
        await handle.close();
        return async () => {
          const holder = await readLock(path);
          if (holder?.token === token) await unlink(path);
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = await readLock(path);
      if (await isStale(path, holder)) {
        // Renaming first means two processes that both see the stale lock cannot both remove a fresh one.
        const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
        await rename(path, aside).then(
          () => unlink(aside),
          () => undefined,
        );
        continue;
      }
      if (Date.now() > deadline) {
        throw new IndexLockedError(
          `The index at ${this.root} is being written by process ${holder?.pid ?? "?"} on ${holder?.host ?? "?"}; ` +
            `gave up waiting. If no such process runs, delete ${path}.`,
        );
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 250);
    }
  }
}

interface LockHolder {
  pid: number;
  host: string;
  token: string;
  since: number;
}

async function readLock(path: string): Promise<LockHolder | null> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as LockHolder;
  } catch {
    return null;
  }
}

/** A lock is stale when its process (on this host) is gone, or when it stayed unreadable for seconds. */
async function isStale(path: string, holder: LockHolder | null): Promise<boolean> {
  if (!holder) {
    const info = await stat(path).catch(() => null);
    return info !== null && Date.now() - info.mtimeMs > 5_000;
  }
  if (holder.host !== hostname()) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

async function writeDurably(path: string, data: Uint8Array): Promise<void> {
  const handle = await open(path, "w");
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function describe(dir: string, name: string): Promise<IndexFile> {
  let size = 0;
  let checksum = 0;
  for await (const chunk of createReadStream(join(dir, name))) {
    size += (chunk as Buffer).byteLength;
    checksum = crc32(chunk as Buffer, checksum);
  }
  return { name, size, crc32: checksum };
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}
