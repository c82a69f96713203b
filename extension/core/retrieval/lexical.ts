import { headwordKey, tokenize } from "./normalize";
import type { Entry, MatchKind, Retriever, SearchHit, SearchOptions } from "./types";

interface Posting {
  docs: number[];
  tfs: number[];
}

/** BM25 parameters (Robertson/Sparck Jones defaults used by Lucene and bm25s). */
const K1 = 1.2;
const B = 0.75;
/** Headwords shorter than this are not reported by the sentence scan: single characters match everywhere. */
const MIN_SCAN_CHARS = 2;

/**
 * An in-memory lexical index over one or more corpora: exact and normalized headword lookup, a
 * scan of a whole sentence for the dictionary terms it contains (longest first), and BM25 over
 * headwords and glosses with character n-grams for CJK.
 */
export class LexicalIndex implements Retriever {
  private readonly entries: Entry[] = [];
  private readonly sources: string[] = [];
  private readonly byKey = new Map<string, number[]>();
  private readonly postings = new Map<string, Posting>();
  private readonly docLengths: number[] = [];
  private totalLength = 0;
  private longestKey = 0;
  readonly corpusIds: string[] = [];

  get size(): number {
    return this.entries.length;
  }

  add(entry: Entry, corpus: string): void {
    const doc = this.entries.length;
    this.entries.push(entry);
    this.sources.push(corpus);
    if (!this.corpusIds.includes(corpus)) this.corpusIds.push(corpus);
    for (const form of [entry.headword, ...(entry.variants ?? [])]) {
      const key = headwordKey(form);
      if (!key) continue;
      const list = this.byKey.get(key);
      if (list) {
        if (list.at(-1) !== doc) list.push(doc);
      } else this.byKey.set(key, [doc]);
      this.longestKey = Math.max(this.longestKey, [...key].length);
    }
    const terms = tokenize(`${entry.headword} ${entry.gloss} ${(entry.tags ?? []).join(" ")}`);
    const counts = new Map<string, number>();
    for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
    for (const [term, tf] of counts) {
      let posting = this.postings.get(term);
      if (!posting) {
        posting = { docs: [], tfs: [] };
        this.postings.set(term, posting);
      }
      posting.docs.push(doc);
      posting.tfs.push(tf);
    }
    this.docLengths.push(terms.length);
    this.totalLength += terms.length;
  }

  async search(query: string, options: SearchOptions): Promise<SearchHit[]> {
    return this.searchSync(query, options);
  }

  searchSync(query: string, options: SearchOptions): SearchHit[] {
    const langs = options.langs?.length ? new Set(options.langs) : null;
    const keep = (doc: number) => !langs || langs.has(this.entries[doc]!.lang);
    const hits: SearchHit[] = [];
    const seen = new Set<number>();
    const push = (doc: number, score: number, match: MatchKind) => {
      if (seen.has(doc) || !keep(doc) || hits.length >= options.topk) return;
      seen.add(doc);
      hits.push(this.hit(doc, score, match));
    };
    const key = headwordKey(query);
    if (!key) return [];
    for (const doc of this.byKey.get(key) ?? []) {
      const exact = this.entries[doc]!.headword === query.trim();
      push(doc, 1, exact ? "exact" : "normalized");
    }
    const queryChars = [...key].length;
    for (const { doc, chars } of this.scan(key)) {
      if (chars < queryChars) push(doc, chars / queryChars, "contained");
    }
    if (hits.length < options.topk) {
      for (const { doc, score } of this.bm25(query, options.topk + seen.size)) push(doc, score, "bm25");
    }
    return hits;
  }

  /** Dictionary terms inside a sentence, longest first (so the idiom wins over its characters). */
  scan(key: string): Array<{ doc: number; chars: number }> {
    const chars = [...key];
    const found: Array<{ doc: number; chars: number; at: number }> = [];
    for (let start = 0; start < chars.length; start++) {
      const maxLen = Math.min(this.longestKey, chars.length - start);
      for (let len = maxLen; len >= MIN_SCAN_CHARS; len--) {
        const docs = this.byKey.get(chars.slice(start, start + len).join(""));
        if (docs) for (const doc of docs) found.push({ doc, chars: len, at: start });
      }
    }
    found.sort((a, b) => b.chars - a.chars || a.at - b.at);
    return found;
  }

  bm25(query: string, topk: number): Array<{ doc: number; score: number }> {
    const terms = [...new Set(tokenize(query))];
    const n = this.entries.length;
    if (n === 0 || terms.length === 0) return [];
    const avgLength = this.totalLength / n;
    const scores = new Map<number, number>();
    for (const term of terms) {
      const posting = this.postings.get(term);
      if (!posting) continue;
      const df = posting.docs.length;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (let i = 0; i < posting.docs.length; i++) {
        const doc = posting.docs[i]!;
        const tf = posting.tfs[i]!;
        const norm = tf + K1 * (1 - B + (B * this.docLengths[doc]!) / avgLength);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * tf * (K1 + 1)) / norm);
      }
    }
    return [...scores]
      .map(([doc, score]) => ({ doc, score }))
      .sort((a, b) => b.score - a.score || a.doc - b.doc)
      .slice(0, topk);
  }

  private hit(doc: number, score: number, match: MatchKind): SearchHit {
    const entry = this.entries[doc]!;
    return {
      id: entry.id,
      headword: entry.headword,
      gloss: entry.gloss,
      score,
      lang: entry.lang,
      source: this.sources[doc]!,
      match,
    };
  }
}
