import { join } from "node:path";
import { updateIndexInBackground } from "./backgroundUpdate";
import type { CorpusSpec } from "./corpora";
import { type BackgroundBuildOptions, buildDenseIndexInBackground } from "./dense/backgroundBuild";
import type { DenseBuildResult } from "./dense/denseBuild";
import { DenseRetriever } from "./dense/denseRetriever";
import { SentenceEncoder, type SentenceEncoderOptions } from "./dense/encoder";
import { corpusFingerprintOf } from "./dense/passages";
import { DenseIndex, DenseIndexError } from "./dense/vectorIndex";
import { HierarchicalRetriever, type HierarchySettings } from "./hierarchy";
import { HybridRetriever } from "./hybrid";
import { IndexStore, lexicalSourceKey, type UpdateResult } from "./indexStore";
import type { FrozenLexicalIndex } from "./lexical";
import { type OnlineProviderConfig, OnlineSearchProvider, WithOnlineTier } from "./online";
import type { Retriever, SearchHit, SearchOptions } from "./types";

/**
 * Everything the retrieval engine is made of, as one configuration: the lexical index (always), an
 * optional dense encoder fused with it (hybrid), the optional LcRL language hierarchy on top, and the
 * optional online tier last. The extension, the CLI and the retrieval server all build it from here,
 * so they search the same index files the same way.
 */
export interface EngineConfig {
  /** Folder of the lexical index store (the dense index lives in `<indexDir>/dense`). */
  indexDir: string;
  /** Exactly the corpora to search: the index drops any it held that are not named here. */
  corpora: CorpusSpec[];
  dense?: {
    encoder: SentenceEncoderOptions;
    weight?: number;
    lexicalWeight?: number;
    /** HNSW candidate list size per query (default DEFAULT_HNSW_PARAMS.efSearch). */
    efSearch?: number;
  };
  hierarchy?: HierarchySettings;
  online?: OnlineProviderConfig & { when?: "fallback" | "always" };
  /** Longest gloss returned per result (characters). */
  maxGlossChars?: number;
}

export interface EngineHooks {
  onProgress?: (message: string) => void;
  /** Import and index in a worker thread (the editor's thread must never be busy for minutes). */
  updateInWorker?: boolean;
  /** Problems that do not stop a search (an online tier down, a dense index being built). */
  onWarning?: (message: string) => void;
}

/** What the engine is doing about its dense half. */
export type DenseState =
  | { kind: "off" }
  | { kind: "ready" }
  | { kind: "needs-build"; reason: string }
  | { kind: "failed"; reason: string };

export class RetrievalEngine implements Retriever {
  private constructor(
    readonly lexical: FrozenLexicalIndex,
    private readonly retriever: Retriever,
    readonly update: UpdateResult,
    readonly dense: DenseState,
    private readonly config: EngineConfig,
  ) {}

  get corpusIds(): readonly string[] {
    return this.retriever.corpusIds;
  }

  /**
   * Imports what changed, loads the lexical index, and assembles the configured layers. A corrupt
   * lexical index rejects with IndexCorruptError (the caller offers `rebuild`); a missing or stale dense
   * index does not fail the engine: it searches lexically and reports `dense.kind === "needs-build"`.
   */
  static async open(config: EngineConfig, hooks: EngineHooks = {}): Promise<RetrievalEngine> {
    const store = new IndexStore(config.indexDir, { onProgress: hooks.onProgress });
    const update = hooks.updateInWorker
      ? await updateIndexInBackground(config.indexDir, config.corpora, { prune: true, onProgress: hooks.onProgress })
      : await store.update(config.corpora, { prune: true });
    const { index, manifest } = await store.load();
    let retriever: Retriever = index;
    let dense: DenseState = { kind: "off" };
    if (config.dense) {
      const opened = await RetrievalEngine.openDense(index, lexicalSourceKey(manifest), config, hooks);
      dense = opened.state;
      if (opened.retriever) {
        retriever = new HybridRetriever(
          [
            { name: "lexical", retriever: index, weight: config.dense.lexicalWeight },
            { name: "dense", retriever: opened.retriever, weight: config.dense.weight },
          ],
          { glossCap: config.maxGlossChars, onWarning: (w) => hooks.onWarning?.(`${w.engine} search: ${w.message}`) },
        );
      }
    }
    if (config.hierarchy?.languages.length) retriever = new HierarchicalRetriever(retriever, config.hierarchy);
    if (config.online) {
      retriever = new WithOnlineTier(retriever, new OnlineSearchProvider(config.online), {
        when: config.online.when,
        onWarning: (message) => hooks.onWarning?.(`online search: ${message}`),
      });
    }
    return new RetrievalEngine(index, retriever, update, dense, config);
  }

  /** Rebuilds the lexical index from its sources (the answer to IndexCorruptError). */
  static async rebuild(config: EngineConfig, hooks: EngineHooks = {}): Promise<RetrievalEngine> {
    if (hooks.updateInWorker) {
      await updateIndexInBackground(config.indexDir, config.corpora, {
        force: true,
        prune: true,
        onProgress: hooks.onProgress,
      });
    } else {
      await new IndexStore(config.indexDir, { onProgress: hooks.onProgress }).update(config.corpora, {
        force: true,
        prune: true,
      });
    }
    return RetrievalEngine.open(config, hooks);
  }

  async search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    return this.retriever.search(query, {
      ...options,
      maxGlossChars: options.maxGlossChars ?? this.config.maxGlossChars,
    });
  }

  /**
   * Builds (or resumes, or updates) the dense index off the main thread; open a new engine afterwards
   * to search it. Progress and cancellation as in buildDenseIndexInBackground.
   */
  buildDense(hooks: Pick<BackgroundBuildOptions, "onProgress" | "signal"> = {}): Promise<DenseBuildResult> {
    const dense = this.config.dense;
    if (!dense) return Promise.reject(new Error("No dense encoder is configured."));
    // The worker reads the entries from the lexical index itself: walking a large corpus here would
    // hold the editor's thread for seconds.
    return buildDenseIndexInBackground(
      { dir: denseDir(this.config), lexicalIndex: this.config.indexDir },
      dense.encoder,
      hooks,
    );
  }

  private static async openDense(
    index: FrozenLexicalIndex,
    sourceKey: string,
    config: EngineConfig,
    hooks: EngineHooks,
  ): Promise<{ retriever?: DenseRetriever; state: DenseState }> {
    const dense = config.dense!;
    const encoder = new SentenceEncoder(dense.encoder);
    try {
      // A dense index built from this very lexical generation covers its entries; anything else is
      // checked against a fingerprint of every entry, computed without holding the thread.
      const built = await DenseIndex.readManifest(denseDir(config));
      const fingerprint = !built
        ? ""
        : built.sourceKey === sourceKey
          ? built.corpusFingerprint
          : await corpusFingerprintOf(index.entries());
      const retriever = await DenseRetriever.open(
        denseDir(config),
        encoder,
        fingerprint,
        (ordinal) => (ordinal >= 0 && ordinal < index.size ? denseEntry(index, ordinal) : undefined),
        index.corpusIds,
        dense.efSearch,
      );
      // Load the encoder and run it once now: the first search should not pay for the model load and
      // the runtime's first inference, and an encoder that cannot load turns dense search off here,
      // once, instead of warning on every search.
      await encoder.encodeQueries(["warm-up"]);
      return { retriever, state: { kind: "ready" } };
    } catch (e) {
      if (e instanceof DenseIndexError) {
        hooks.onWarning?.(`dense search is off until its index is built: ${e.message}`);
        return { state: { kind: "needs-build", reason: e.message } };
      }
      hooks.onWarning?.(`dense search is off: ${(e as Error).message}`);
      return { state: { kind: "failed", reason: (e as Error).message } };
    }
  }
}

function denseDir(config: EngineConfig): string {
  return join(config.indexDir, "dense");
}

function denseEntry(index: FrozenLexicalIndex, ordinal: number) {
  const e = index.entry(ordinal);
  return { id: e.id, headword: e.headword, gloss: e.gloss, lang: e.lang, source: e.corpus };
}
