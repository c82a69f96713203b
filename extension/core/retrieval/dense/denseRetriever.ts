import type { Retriever, SearchHit, SearchOptions } from "../types";
import type { TextEncoder } from "./encoder";
import { DEFAULT_HNSW_PARAMS } from "./hnswParams";
import { DenseIndex, type DenseManifest } from "./vectorIndex";

/** What the dense retriever needs to show a result: the entry behind an ordinal, from whoever holds the entries. */
export interface DenseEntry {
  id: string;
  headword: string;
  gloss: string;
  lang: string;
  /** Corpus id. */
  source: string;
}

export type EntryLookup = (ordinal: number) => DenseEntry | undefined;

export interface DenseSearchTiming {
  encodeMs: number;
  searchMs: number;
}

/**
 * Nearest-neighbour search over a dense index: encodes the query, searches the HNSW graph and maps labels
 * back to entries through `lookup`. Score is the cosine similarity.
 */
export class DenseRetriever implements Retriever {
  /** Timing of the latest search, for benchmarks and the trajectory. */
  lastTiming: DenseSearchTiming = { encodeMs: 0, searchMs: 0 };

  constructor(
    private readonly index: DenseIndex,
    private readonly encoder: TextEncoder,
    private readonly lookup: EntryLookup,
    readonly corpusIds: readonly string[],
    readonly manifest?: DenseManifest,
  ) {}

  /**
   * Opens the index in `dir` for `encoder` and the corpus whose fingerprint is given (see `corpusFingerprint`).
   * Throws DenseIndexError when the index is missing, stale, incomplete or corrupt: never searches it anyway.
   */
  static async open(
    dir: string,
    encoder: TextEncoder,
    corpusFingerprint: string,
    lookup: EntryLookup,
    corpusIds: readonly string[],
    efSearch: number = DEFAULT_HNSW_PARAMS.efSearch,
  ): Promise<DenseRetriever> {
    const { index, manifest } = await DenseIndex.open(
      dir,
      { encoderId: encoder.id, corpusFingerprint },
      { ledger: false, efSearch },
    );
    return new DenseRetriever(index, encoder, lookup, corpusIds, manifest);
  }

  async search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    throwIfAborted(options.signal);
    const t0 = performance.now();
    const [vector] = await this.encoder.encodeQueries([query]);
    const t1 = performance.now();
    throwIfAborted(options.signal);
    if (!vector) return [];
    const langs = options.langs?.length ? new Set(options.langs) : null;
    const filter = langs
      ? (ordinal: number) => {
          const entry = this.lookup(ordinal);
          return entry !== undefined && langs.has(entry.lang);
        }
      : undefined;
    const found = this.index.search(vector, options.topk, filter);
    this.lastTiming = { encodeMs: t1 - t0, searchMs: performance.now() - t1 };
    const hits: SearchHit[] = [];
    for (const { ordinal, score } of found) {
      const entry = this.lookup(ordinal);
      if (!entry) continue;
      hits.push({ ...entry, score, match: "dense" });
    }
    return hits;
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new DOMException("Aborted", "AbortError");
}
