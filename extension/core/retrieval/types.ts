/** Why a result matched: shown in the evidence panel and recorded in trajectories. */
export type MatchKind = "exact" | "normalized" | "contained" | "fuzzy" | "bm25" | "dense" | "hybrid" | "online";

/** One reason a result matched, with the score that engine gave it (hybrid results carry several). */
export interface MatchReason {
  kind: Exclude<MatchKind, "hybrid">;
  score: number;
  /** 1-based rank in that engine's list. */
  rank?: number;
}

/** One dictionary entry, glossary term, TM segment or document chunk. */
export interface Entry {
  /** Stable id: `<corpus>:<key>`; the same source line always yields the same id. */
  id: string;
  headword: string;
  /** Other written forms that should find this entry (traditional script, readings). */
  variants?: string[];
  /** The explanation or target-language equivalent. */
  gloss: string;
  /** Language of the headword (BCP-47 primary tag, e.g. "zh"). */
  lang: string;
  /** Language of the gloss, when known. */
  glossLang?: string;
  pos?: string;
  /** Searchable metadata such as "idiom", "slang", "neologism". */
  tags?: string[];
  /** Usage examples (source-language sentences, with translations when the source gives them). */
  examples?: string[];
}

export interface SearchHit {
  id: string;
  headword: string;
  gloss: string;
  score: number;
  lang: string;
  /** Corpus id the entry came from. */
  source: string;
  match: MatchKind;
  /** Every engine that found this result, for the evidence panel (set by hybrid search). */
  reasons?: MatchReason[];
  /** Retrieval tier (0 = query language first); see the multilingual hierarchy. */
  tier?: number;
  /** True for results from the optional online tier (web or wiki search), which are cached locally. */
  online?: boolean;
  /** Entry tags (idiom, slang, neologism…) when the corpus records them. */
  tags?: string[];
}

/** A corpus as imported: where it came from and under what terms it may be used. */
export interface CorpusInfo {
  id: string;
  /** Absolute path of the file it was imported from. */
  file: string;
  format: string;
  /** Licence and attribution to show beside its results and keep beside derived files. */
  licence?: string;
  attribution?: string;
  /** Size, mtime and content hash of the source file when imported; an unchanged file is not re-imported. */
  fingerprint: { size: number; mtimeMs: number; sha256: string };
  entries: number;
}

export interface SearchOptions {
  topk: number;
  /** Restrict to entries in these headword languages, when given. */
  langs?: string[];
  signal?: AbortSignal;
  /** Longest gloss per result, in characters (longer ones end in "…"). */
  maxGlossChars?: number;
  /**
   * Problems this search met without failing (one engine of a hybrid failed, the online tier is down):
   * the caller may show them beside the results. Layers pass it down to the retrievers they wrap.
   */
  onWarning?: (message: string) => void;
}

/** Anything the agent can search: one corpus, or several combined. */
export interface Retriever {
  readonly corpusIds: readonly string[];
  search(query: string, options: SearchOptions): Promise<SearchHit[]>;
}
