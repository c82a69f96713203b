/** HNSW graph and search parameters (no native code here: settings and the webview may import this). */
export interface HnswParams {
  /** Graph degree. */
  m: number;
  efConstruction: number;
  /** Candidate list size at query time: higher is slower and finds more of the true neighbours. */
  efSearch: number;
  randomSeed: number;
}

/**
 * efSearch 200: on 425k MiniLM vectors (M 16, efConstruction 200) it finds 93.7% of the true top 10 in
 * 1.6–2.1 ms at p95, where 64 finds 84.8% in 0.8–1.0 ms (bench/retrieval-dense.ts); query encoding
 * costs more than either, so the better recall is worth the millisecond.
 */
export const DEFAULT_HNSW_PARAMS: HnswParams = { m: 16, efConstruction: 200, efSearch: 200, randomSeed: 100 };
