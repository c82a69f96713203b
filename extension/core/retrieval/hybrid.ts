import type { MatchReason, Retriever, SearchHit, SearchOptions } from "./types";

export interface HybridEngine {
  /** Shown in warnings ("dense", "lexical:cc-cedict"). */
  name: string;
  retriever: Retriever;
  /** Multiplies this engine's reciprocal-rank contribution. Default 1. */
  weight?: number;
}

export interface HybridOptions {
  /** The RRF constant: a larger k flattens the advantage of the top ranks. Default 60 (Cormack et al. 2009). */
  k?: number;
  /** Results asked of each engine; fusing deeper lists finds agreements lower down. Default max(50, 4 × topk). */
  depth?: number;
  /** Glosses longer than this many characters are cut, with "…". Default 2000 (the evidence format's limit). */
  glossCap?: number;
  /** Called for each engine that failed while the others answered. */
  onWarning?: (warning: HybridWarning) => void;
}

export interface HybridWarning {
  engine: string;
  message: string;
}

export interface HybridResult {
  hits: SearchHit[];
  /** Engines that failed; their results are missing from `hits`. */
  warnings: HybridWarning[];
}

/** Every engine failed; `warnings` says how. */
export class HybridSearchError extends Error {
  override readonly name = "HybridSearchError";
  constructor(readonly warnings: HybridWarning[]) {
    super(`Every search engine failed: ${warnings.map((w) => `${w.engine}: ${w.message}`).join("; ")}`);
  }
}

interface Fused {
  hit: SearchHit;
  score: number;
  reasons: MatchReason[];
  engines: number;
}

/**
 * Reciprocal-rank fusion of several retrievers (lexical, dense…), queried in parallel. A result's score is
 * Σ weight / (k + rank) over the engines that found it; each result lists every engine's reason, score and
 * rank. One failing engine costs its results only: the others' are returned with a warning.
 */
export class HybridRetriever implements Retriever {
  readonly corpusIds: readonly string[];
  private readonly k: number;
  private readonly glossCap: number;

  constructor(
    private readonly engines: readonly HybridEngine[],
    private readonly options: HybridOptions = {},
  ) {
    if (engines.length === 0) throw new Error("HybridRetriever needs at least one engine");
    this.k = options.k ?? 60;
    this.glossCap = options.glossCap ?? 2000;
    this.corpusIds = [...new Set(engines.flatMap((e) => e.retriever.corpusIds))];
  }

  async search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    return (await this.searchWithWarnings(query, options)).hits;
  }

  async searchWithWarnings(query: string, options: SearchOptions): Promise<HybridResult> {
    const { signal } = options;
    throwIfAborted(signal);
    const depth = this.options.depth ?? Math.max(50, options.topk * 4);
    const engineOptions: SearchOptions = {
      topk: depth,
      ...(options.langs ? { langs: options.langs } : {}),
      ...(signal ? { signal } : {}),
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    };
    const settled = await Promise.allSettled(this.engines.map((e) => e.retriever.search(query, engineOptions)));
    throwIfAborted(signal);
    const warnings: HybridWarning[] = [];
    const langs = options.langs?.length ? new Set(options.langs) : null;
    const fused = new Map<string, Fused>();
    settled.forEach((outcome, i) => {
      const engine = this.engines[i] as HybridEngine;
      if (outcome.status === "rejected") {
        const warning = { engine: engine.name, message: messageOf(outcome.reason) };
        warnings.push(warning);
        this.options.onWarning?.(warning);
        return;
      }
      const weight = engine.weight ?? 1;
      const seen = new Set<string>();
      let rank = 0;
      for (const hit of outcome.value) {
        if (seen.has(hit.id) || (langs && !langs.has(hit.lang))) continue;
        seen.add(hit.id);
        rank++;
        const reasons: MatchReason[] =
          hit.match === "hybrid" ? (hit.reasons ?? []) : [{ kind: hit.match, score: hit.score, rank }];
        const existing = fused.get(hit.id);
        if (existing) {
          existing.score += weight / (this.k + rank);
          existing.reasons.push(...reasons);
          existing.engines++;
        } else {
          fused.set(hit.id, { hit, score: weight / (this.k + rank), reasons: [...reasons], engines: 1 });
        }
      }
    });
    if (warnings.length === this.engines.length) throw new HybridSearchError(warnings);
    for (const w of warnings) options.onWarning?.(`${w.engine} search: ${w.message}`);
    const hits = [...fused.values()]
      .sort((a, b) => b.score - a.score || a.hit.id.localeCompare(b.hit.id))
      .slice(0, options.topk)
      .map((f): SearchHit => {
        const { reasons: _ignored, ...hit } = f.hit;
        return {
          ...hit,
          gloss: capGloss(hit.gloss, this.glossCap),
          score: f.score,
          match: f.engines > 1 ? "hybrid" : hit.match,
          reasons: f.reasons,
        };
      });
    return { hits, warnings };
  }
}

function capGloss(gloss: string, cap: number): string {
  const chars = [...gloss];
  return chars.length <= cap ? gloss : `${chars.slice(0, Math.max(0, cap - 1)).join("")}…`;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new DOMException("Aborted", "AbortError");
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";
}
