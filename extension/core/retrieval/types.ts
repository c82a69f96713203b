/** Why a result matched: shown in the evidence panel and recorded in trajectories. */
export type MatchKind = "exact" | "normalized" | "contained" | "fuzzy" | "bm25" | "dense" | "hybrid";

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
  /** Retrieval tier (0 = query language first); see the multilingual hierarchy. */
  tier?: number;
}

export interface SearchOptions {
  topk: number;
  /** Restrict to entries in these headword languages, when given. */
  langs?: string[];
  signal?: AbortSignal;
}

/** Anything the agent can search: one corpus, or several combined. */
export interface Retriever {
  readonly corpusIds: readonly string[];
  search(query: string, options: SearchOptions): Promise<SearchHit[]>;
}
