import type { TextEncoder } from "./encoder";
import { contentHash, corpusFingerprint, type DensePassage } from "./passages";
import { DenseIndex, DenseIndexError, type DenseManifest, type HnswParams } from "./vectorIndex";

export interface DenseBuildRequest {
  /** Folder of the index (manifest, index and ledger files). */
  dir: string;
  /** The whole corpus as it should be indexed; ordinals are the vector labels. */
  passages: DensePassage[];
  /** The lexical index generation the passages come from (see DenseManifest.sourceKey). */
  sourceKey?: string;
  params?: Partial<HnswParams>;
  /** Seconds between checkpoints (index + ledger + manifest marked incomplete). Default 30. */
  checkpointSeconds?: number;
  /** Texts encoded and inserted per step; cancellation and progress are checked between steps. Default 256. */
  chunkSize?: number;
}

export interface DenseBuildProgress {
  phase: "planning" | "building" | "saving" | "done";
  /** Passages whose vector is in place, of `total`. */
  done: number;
  total: number;
  /** Vectors per second produced in this run, and the seconds left at that rate. */
  ratePerSec: number;
  etaSec: number;
  encodeRatePerSec: number;
  insertRatePerSec: number;
}

export interface DenseBuildResult {
  manifest: DenseManifest;
  /** Passages already in the index with the same id and content (a resumed or incremental build skips them). */
  kept: number;
  /** Passages whose vector was copied from another ordinal with the same content instead of encoded. */
  reused: number;
  /** Passages sent to the encoder. */
  encoded: number;
  /** Ordinals dropped from the index (entries removed from the corpus). */
  removed: number;
  /** Why the existing index was discarded and rebuilt from nothing, if it was. */
  rebuiltBecause?: string;
  encodeSeconds: number;
  insertSeconds: number;
  encodeRatePerSec: number;
  insertRatePerSec: number;
}

/** A build stopped by its AbortSignal; the checkpoint it saved lets the next build resume. */
export class DenseBuildCancelled extends Error {
  override readonly name = "AbortError";
  constructor(readonly progress: { done: number; total: number }) {
    super(`Dense index build cancelled at ${progress.done}/${progress.total}; the next build resumes from there.`);
  }
}

export interface DenseBuildHooks {
  onProgress?: (progress: DenseBuildProgress) => void;
  signal?: AbortSignal;
}

/**
 * Brings the index in `dir` up to date with `passages`: keeps vectors whose entry is unchanged, reuses
 * vectors of moved text, encodes only what is new, marks removed ordinals deleted, and checkpoints as it goes.
 * A stale or corrupt index (other encoder, dimension or format) is rebuilt from nothing. This runs on the
 * calling thread; `buildDenseIndexInBackground` runs it in a worker.
 */
export async function buildDenseIndex(
  request: DenseBuildRequest,
  encoder: TextEncoder,
  hooks: DenseBuildHooks = {},
): Promise<DenseBuildResult> {
  const { dir, passages } = request;
  const chunkSize = Math.max(1, request.chunkSize ?? 256);
  const checkpointMs = (request.checkpointSeconds ?? 30) * 1000;
  const total = passages.length;
  const started = Date.now();
  const report = (phase: DenseBuildProgress["phase"], done: number, produced: number, times: Times) => {
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? produced / seconds : 0;
    hooks.onProgress?.({
      phase,
      done,
      total,
      ratePerSec: rate,
      etaSec: rate > 0 ? (total - done) / rate : Number.POSITIVE_INFINITY,
      encodeRatePerSec: times.encodeSeconds > 0 ? times.encoded / times.encodeSeconds : 0,
      insertRatePerSec: times.insertSeconds > 0 ? times.inserted / times.insertSeconds : 0,
    });
  };
  const times: Times = { encoded: 0, encodeSeconds: 0, inserted: 0, insertSeconds: 0 };
  report("planning", 0, 0, times);

  const fingerprint = corpusFingerprint(passages);
  const dimension = await encoder.dimension();
  const { index, rebuiltBecause, upToDate } = await openOrCreate(
    dir,
    encoder.id,
    dimension,
    fingerprint,
    request,
    total,
  );
  if (upToDate) {
    const manifest =
      request.sourceKey && upToDate.sourceKey !== request.sourceKey
        ? await DenseIndex.recordSource(dir, upToDate, request.sourceKey)
        : upToDate;
    report("done", total, 0, times);
    return {
      manifest,
      kept: total,
      reused: 0,
      encoded: 0,
      removed: 0,
      encodeSeconds: 0,
      insertSeconds: 0,
      encodeRatePerSec: 0,
      insertRatePerSec: 0,
    };
  }

  const wanted = new Set<number>();
  const byHash = new Map<string, number>();
  for (const [ordinal, row] of index.ledger) byHash.set(row.hash, ordinal);
  const pending: Array<{ passage: DensePassage; hash: string }> = [];
  let kept = 0;
  for (const passage of passages) {
    wanted.add(passage.ordinal);
    const hash = contentHash(passage.text);
    const row = index.ledger.get(passage.ordinal);
    if (row && row.id === passage.id && row.hash === hash) kept++;
    else pending.push({ passage, hash });
  }
  // Copy moved vectors out before removing or writing any, so that a chain of moves never reads a replaced label.
  const moved: Array<{ passage: DensePassage; hash: string; vector: Float32Array }> = [];
  const toEncode: Array<{ passage: DensePassage; hash: string }> = [];
  for (const item of pending) {
    const from = byHash.get(item.hash);
    if (from !== undefined && index.ledger.has(from)) moved.push({ ...item, vector: index.vectorOf(from) });
    else toEncode.push(item);
  }
  let removed = 0;
  for (const ordinal of [...index.ledger.keys()]) {
    if (!wanted.has(ordinal)) {
      index.remove(ordinal);
      removed++;
    }
  }
  index.reserve(pending.length);
  for (const { passage, hash, vector } of moved) index.upsert(passage.ordinal, { id: passage.id, hash }, vector);
  let done = kept + moved.length;

  const save = (complete: boolean) =>
    index.save(dir, {
      encoderId: encoder.id,
      corpusFingerprint: fingerprint,
      complete,
      progress: { done, total },
      ...(request.sourceKey ? { sourceKey: request.sourceKey } : {}),
    });
  let lastCheckpoint = Date.now();
  for (let start = 0; start < toEncode.length; start += chunkSize) {
    if (hooks.signal?.aborted) {
      report("saving", done, times.inserted, times);
      await save(false);
      throw new DenseBuildCancelled({ done, total });
    }
    const chunk = toEncode.slice(start, start + chunkSize);
    const t0 = performance.now();
    const vectors = await encoder.encodePassages(chunk.map((c) => c.passage.text));
    const t1 = performance.now();
    chunk.forEach(({ passage, hash }, i) => {
      index.upsert(passage.ordinal, { id: passage.id, hash }, vectors[i] as Float32Array);
    });
    const t2 = performance.now();
    times.encoded += chunk.length;
    times.encodeSeconds += (t1 - t0) / 1000;
    times.inserted += chunk.length;
    times.insertSeconds += (t2 - t1) / 1000;
    done += chunk.length;
    report("building", done, times.inserted, times);
    if (Date.now() - lastCheckpoint >= checkpointMs && done < total) {
      report("saving", done, times.inserted, times);
      await save(false);
      lastCheckpoint = Date.now();
    }
  }
  report("saving", done, times.inserted, times);
  const manifest = await save(true);
  report("done", done, times.inserted, times);
  return {
    manifest,
    kept,
    reused: moved.length,
    encoded: times.encoded,
    removed,
    ...(rebuiltBecause ? { rebuiltBecause } : {}),
    encodeSeconds: times.encodeSeconds,
    insertSeconds: times.insertSeconds,
    encodeRatePerSec: times.encodeSeconds > 0 ? times.encoded / times.encodeSeconds : 0,
    insertRatePerSec: times.insertSeconds > 0 ? times.inserted / times.insertSeconds : 0,
  };
}

interface Times {
  encoded: number;
  encodeSeconds: number;
  inserted: number;
  insertSeconds: number;
}

async function openOrCreate(
  dir: string,
  encoderId: string,
  dimension: number,
  fingerprint: string,
  request: DenseBuildRequest,
  total: number,
): Promise<{ index: DenseIndex; rebuiltBecause?: string; upToDate?: DenseManifest }> {
  const fresh = () => DenseIndex.create(dimension, request.params, total);
  let manifest: DenseManifest | null;
  try {
    manifest = await DenseIndex.readManifest(dir);
  } catch (err) {
    return { index: fresh(), rebuiltBecause: (err as Error).message };
  }
  if (!manifest) return { index: fresh() };
  const stale = DenseIndex.staleness(manifest, { encoderId, dimension });
  if (stale) return { index: fresh(), rebuiltBecause: stale };
  if (request.params && Object.entries(request.params).some(([k, v]) => manifest.params[k as keyof HnswParams] !== v)) {
    return { index: fresh(), rebuiltBecause: "the HNSW parameters changed" };
  }
  try {
    const { index } = await DenseIndex.open(dir, { encoderId, dimension }, { allowPartial: true });
    const upToDate = manifest.complete && manifest.corpusFingerprint === fingerprint;
    return upToDate ? { index, upToDate: manifest } : { index };
  } catch (err) {
    if (err instanceof DenseIndexError) return { index: fresh(), rebuiltBecause: err.message };
    throw err;
  }
}
