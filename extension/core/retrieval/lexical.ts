import { FuzzyMatcher } from "./fuzzy";
import { keyOf, LexicalIndexBuilder } from "./lexicalBuilder";
import { EMPTY_HASH, extendHash, hashString, type LexicalArrays, type LexicalMeta, StringTable } from "./lexicalFormat";
import { cleanQuery, queryTerms } from "./lexicalTerms";
import { ScriptFolding } from "./scriptVariants";
import type { Entry, MatchKind, Retriever, SearchHit, SearchOptions } from "./types";

/** BM25 parameters (Robertson/Sparck Jones defaults used by Lucene and bm25s). */
const K1 = 1.2;
const B = 0.75;
/** Headwords shorter than this are not reported by the sentence scan: single characters match everywhere. */
const MIN_SCAN_CHARS = 2;
/** Entries reported per headword key: a key shared by thousands of entries still answers in bounded time. */
const MAX_DOCS_PER_KEY = 256;

export interface LexicalSearchOptions extends SearchOptions {
  /** Glosses longer than this are cut (with "…") in the results. */
  maxGlossChars?: number;
}

export interface ScoredDoc {
  doc: number;
  score: number;
}

export interface ScanHit {
  doc: number;
  /** Length of the matched key in code points. */
  chars: number;
  /** Position of the match in the query key, in code points. */
  at: number;
}

/**
 * An immutable lexical index over typed arrays (built by LexicalIndexBuilder or loaded from an
 * index folder): exact and normalized headword lookup (NFKC, case, width, punctuation and
 * Traditional/Simplified folded), fuzzy headword, a scan of a whole sentence for the dictionary
 * terms it contains (longest first), and BM25 over headwords, glosses and tags with character
 * n-grams for CJK. Only returned hits are decoded into objects.
 */
export class FrozenLexicalIndex implements Retriever {
  readonly corpusIds: readonly string[];
  private readonly a: LexicalArrays;
  private readonly headwords: StringTable;
  private readonly keys: StringTable;
  private readonly terms: StringTable;
  private readonly folding: ScriptFolding;
  private readonly fuzzy: FuzzyMatcher;
  private readonly docNorm: Float32Array;
  private readonly recordText: Buffer;
  private accumulator: Float32Array | undefined;
  private touched: Int32Array | undefined;

  constructor(
    arrays: LexicalArrays,
    readonly meta: LexicalMeta,
  ) {
    this.a = arrays;
    this.corpusIds = meta.corpusIds;
    this.headwords = new StringTable(arrays.headwordBlob, arrays.headwordOffsets);
    this.keys = new StringTable(arrays.keyBlob, arrays.keyOffsets);
    this.terms = new StringTable(arrays.termBlob, arrays.termOffsets);
    this.folding = new ScriptFolding(arrays.scriptFolding);
    this.fuzzy = new FuzzyMatcher(
      this.keys,
      new StringTable(arrays.reversedKeyBlob, arrays.reversedKeyOffsets),
      arrays.reversedKeyIds,
      meta.longestKey,
    );
    const blob = arrays.recordBlob;
    this.recordText = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
    const avgLength = meta.docCount ? meta.totalLength / meta.docCount : 1;
    this.docNorm = new Float32Array(meta.docCount);
    for (let d = 0; d < meta.docCount; d++) {
      this.docNorm[d] = K1 * (1 - B + (B * arrays.docLength[d]!) / avgLength);
    }
  }

  get size(): number {
    return this.meta.docCount;
  }

  /** Key the index files entries under: normalized, punctuation removed, Traditional folded to Simplified. */
  key(text: string): string {
    return this.folding.fold(keyOf(cleanQuery(text)));
  }

  async search(query: string, options: LexicalSearchOptions): Promise<SearchHit[]> {
    return this.searchSync(query, options);
  }

  /** Headword matches first, then fuzzy headwords, then terms inside the query, then BM25, to `topk`. */
  searchSync(query: string, options: LexicalSearchOptions): SearchHit[] {
    const allowed = this.langFilter(options.langs);
    const hits: SearchHit[] = [];
    const seen = new Set<number>();
    const push = (doc: number, score: number, match: MatchKind, headword?: string) => {
      if (hits.length >= options.topk || seen.has(doc) || (allowed && !allowed[this.a.docLang[doc]!])) return;
      seen.add(doc);
      hits.push(this.hit(doc, score, match, options.maxGlossChars, headword));
    };
    const key = this.key(query);
    if (!key || options.topk <= 0) return [];
    const trimmed = query.trim();
    const byHeadword = this.headwordDocs(key).map((doc) => {
      const headword = this.headwords.get(doc);
      return { doc, headword, exact: headword === trimmed };
    });
    byHeadword.sort((x, y) => Number(y.exact) - Number(x.exact));
    for (const { doc, exact, headword } of byHeadword) push(doc, 1, exact ? "exact" : "normalized", headword);
    if (hits.length === 0) {
      for (const match of this.fuzzyKeys(key, options.topk)) {
        for (const doc of this.docsOfKey(match.key)) push(doc, match.score, "fuzzy");
      }
    }
    const queryChars = this.codePointLength(key);
    for (const { doc, chars } of this.scan(key)) {
      if (chars < queryChars) push(doc, chars / queryChars, "contained");
      if (hits.length >= options.topk) break;
    }
    if (hits.length < options.topk) {
      for (const { doc, score } of this.bm25(query, options.topk + seen.size, options.langs)) push(doc, score, "bm25");
    }
    return hits;
  }

  /** Entries whose headword or a variant has this key, exact headword matches first. */
  headwordDocs(key: string): number[] {
    const k = this.findKey(key, hashString(key), this.codePointLength(key));
    return k < 0 ? [] : this.docsOfKey(k);
  }

  /** Headword lookup alone (no scan, no BM25): what the headword latency figure measures. */
  lookupHeadword(query: string, options: LexicalSearchOptions): SearchHit[] {
    const allowed = this.langFilter(options.langs);
    const trimmed = query.trim();
    const hits: SearchHit[] = [];
    for (const doc of this.headwordDocs(this.key(query))) {
      if (hits.length >= options.topk) break;
      if (allowed && !allowed[this.a.docLang[doc]!]) continue;
      const headword = this.headwords.get(doc);
      hits.push(this.hit(doc, 1, headword === trimmed ? "exact" : "normalized", options.maxGlossChars, headword));
    }
    return hits;
  }

  /** Keys within a few edits of the query key (or of a start of a longer key), best first, scored in (0, 1). */
  fuzzyKeys(key: string, limit: number): Array<{ key: number; distance: number; score: number }> {
    const length = this.codePointLength(key);
    return this.fuzzy.find(key, limit).map((m) => ({
      key: m.key,
      distance: m.distance,
      score: (1 - m.distance / (length + 1)) * (m.prefix ? Math.min(1, length / m.keyLength) : 1),
    }));
  }

  /** Dictionary terms inside a sentence key, longest first (so the idiom wins over its characters). */
  scan(key: string): ScanHit[] {
    const chars = Array.from(key, (c) => c.codePointAt(0)!);
    const found: ScanHit[] = [];
    const longest = this.meta.longestKey;
    for (let start = 0; start < chars.length; start++) {
      const maxLength = Math.min(longest, chars.length - start);
      let hash = EMPTY_HASH;
      const matches: Array<{ key: number; length: number }> = [];
      for (let length = 1; length <= maxLength; length++) {
        hash = extendHash(hash, chars[start + length - 1]!);
        if (length < MIN_SCAN_CHARS) continue;
        const k = this.findKey(null, hash, length, chars, start);
        if (k >= 0) matches.push({ key: k, length });
      }
      for (let i = matches.length - 1; i >= 0; i--) {
        for (const doc of this.docsOfKey(matches[i]!.key)) found.push({ doc, chars: matches[i]!.length, at: start });
      }
    }
    found.sort((x, y) => y.chars - x.chars || x.at - y.at);
    return found;
  }

  /** BM25 top-k; `langs` restricts the documents that may be returned. */
  bm25(query: string, topk: number, langs?: readonly string[]): ScoredDoc[] {
    return this.bm25Terms(queryTerms(query), topk, langs);
  }

  /** BM25 top-k over given terms (the benchmark passes the same terms to another implementation). */
  bm25Terms(terms: readonly string[], topk: number, langs?: readonly string[]): ScoredDoc[] {
    const n = this.meta.docCount;
    if (n === 0 || terms.length === 0 || topk <= 0) return [];
    if (!this.accumulator || !this.touched) {
      this.accumulator = new Float32Array(n);
      this.touched = new Int32Array(n);
    }
    const acc = this.accumulator;
    const touched = this.touched;
    const { postingStart, postingDocs, postingTfs } = this.a;
    const docNorm = this.docNorm;
    let touchedCount = 0;
    for (const term of terms) {
      const t = this.findTerm(term);
      if (t < 0) continue;
      const start = postingStart[t]!;
      const end = postingStart[t + 1]!;
      const df = end - start;
      const weight = Math.log(1 + (n - df + 0.5) / (df + 0.5)) * (K1 + 1);
      for (let p = start; p < end; p++) {
        const doc = postingDocs[p]!;
        const tf = postingTfs[p]!;
        if (acc[doc] === 0) touched[touchedCount++] = doc;
        acc[doc]! += (weight * tf) / (tf + docNorm[doc]!);
      }
    }
    const result = this.topK(touchedCount, topk, this.langFilter(langs));
    for (let i = 0; i < touchedCount; i++) acc[touched[i]!] = 0;
    return result;
  }

  /** Decodes one document as the entry it was built from (for tests, exports and the hybrid layer). */
  entry(doc: number): Entry & { corpus: string } {
    const [id, gloss, tags, variants, glossLang, pos] = this.record(doc);
    return {
      id,
      headword: this.headwords.get(doc),
      gloss,
      lang: this.meta.langs[this.a.docLang[doc]!]!,
      corpus: this.meta.corpusIds[this.a.docCorpus[doc]!]!,
      ...(variants ? { variants } : {}),
      ...(tags ? { tags } : {}),
      ...(glossLang ? { glossLang } : {}),
      ...(pos ? { pos } : {}),
    };
  }

  /** Every entry in document order (ordinal = position), decoded one at a time. */
  *entries(): Generator<Entry & { corpus: string }> {
    for (let doc = 0; doc < this.size; doc++) yield this.entry(doc);
  }

  hit(doc: number, score: number, match: MatchKind, maxGlossChars?: number, headword?: string): SearchHit {
    const [id, gloss, tags] = this.recordHead(doc);
    const cut = maxGlossChars !== undefined && gloss.length > maxGlossChars;
    const hit: SearchHit = {
      id,
      headword: headword ?? this.headwords.get(doc),
      gloss: cut ? `${gloss.slice(0, Math.max(0, maxGlossChars - 1))}…` : gloss,
      score,
      lang: this.meta.langs[this.a.docLang[doc]!]!,
      source: this.meta.corpusIds[this.a.docCorpus[doc]!]!,
      match,
    };
    if (tags) hit.tags = tags;
    return hit;
  }

  private record(doc: number): [string, string, string[] | null, string[] | null, string | null, string | null] {
    const text = this.recordText.toString("utf8", this.a.recordOffsets[doc]!, this.a.recordOffsets[doc + 1]!);
    return JSON.parse(text) as [string, string, string[] | null, string[] | null, string | null, string | null];
  }

  /**
   * The first three fields of a record (id, gloss, tags) without parsing the rest: variants can be
   * long (wiktextract forms, EDICT readings) and a hit never shows them. This is most of the cost of a
   * headword lookup that returns several entries.
   */
  private recordHead(doc: number): [string, string, string[] | null] {
    return readRecordHead(this.recordText, this.a.recordOffsets[doc]!, this.a.recordOffsets[doc + 1]!);
  }

  private docsOfKey(key: number): number[] {
    const start = this.a.keyDocStart[key]!;
    const end = Math.min(this.a.keyDocStart[key + 1]!, start + MAX_DOCS_PER_KEY);
    return Array.from(this.a.keyDocs.subarray(start, end));
  }

  /**
   * Finds a key by hash; the candidate text is either `key` or the code points chars[start, start+length)
   * (the sentence scan passes those to avoid building a substring per probe).
   */
  private findKey(key: string | null, hash: number, length: number, chars?: number[], start = 0): number {
    const { keyTable, keyHashes, keyLengths } = this.a;
    const mask = keyTable.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = keyTable[slot]!;
      if (entry === 0) return -1;
      const k = entry - 1;
      if (keyHashes[k] !== hash || keyLengths[k] !== length) continue;
      const text = this.keys.get(k);
      if (key !== null ? text === key : this.sameCodePoints(text, chars!, start, length)) return k;
    }
  }

  private sameCodePoints(text: string, chars: number[], start: number, length: number): boolean {
    let i = 0;
    for (const c of text) {
      if (i >= length || c.codePointAt(0) !== chars[start + i]) return false;
      i++;
    }
    return i === length;
  }

  private findTerm(term: string): number {
    const { termTable, termHashes } = this.a;
    const hash = hashString(term);
    const mask = termTable.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = termTable[slot]!;
      if (entry === 0) return -1;
      if (termHashes[entry - 1] === hash && this.terms.get(entry - 1) === term) return entry - 1;
    }
  }

  /** A lang-index → allowed table, or null when every language is allowed. */
  private langFilter(langs: readonly string[] | undefined): Uint8Array | null {
    if (!langs?.length) return null;
    const allowed = new Uint8Array(256);
    this.meta.langs.forEach((lang, i) => {
      if (langs.includes(lang)) allowed[i] = 1;
    });
    return allowed;
  }

  /** Best `k` touched documents by score (ties: lower doc first), with a min-heap of size k. */
  private topK(touchedCount: number, k: number, allowed: Uint8Array | null): ScoredDoc[] {
    const acc = this.accumulator!;
    const touched = this.touched!;
    const docLang = this.a.docLang;
    const heapDocs = new Int32Array(k);
    const heapScores = new Float64Array(k);
    let size = 0;
    // "a is worse than b": lower score, or the same score and a later doc.
    const worse = (sa: number, da: number, sb: number, db: number) => sa < sb || (sa === sb && da > db);
    const siftDown = (at: number) => {
      for (;;) {
        const left = 2 * at + 1;
        if (left >= size) return;
        let child = left;
        const right = left + 1;
        if (right < size && worse(heapScores[right]!, heapDocs[right]!, heapScores[left]!, heapDocs[left]!)) {
          child = right;
        }
        if (!worse(heapScores[child]!, heapDocs[child]!, heapScores[at]!, heapDocs[at]!)) return;
        const s = heapScores[at]!;
        const d = heapDocs[at]!;
        heapScores[at] = heapScores[child]!;
        heapDocs[at] = heapDocs[child]!;
        heapScores[child] = s;
        heapDocs[child] = d;
        at = child;
      }
    };
    for (let i = 0; i < touchedCount; i++) {
      const doc = touched[i]!;
      if (allowed && !allowed[docLang[doc]!]) continue;
      const score = acc[doc]!;
      if (size < k) {
        let at = size++;
        heapScores[at] = score;
        heapDocs[at] = doc;
        while (at > 0) {
          const parent = (at - 1) >> 1;
          if (!worse(heapScores[at]!, heapDocs[at]!, heapScores[parent]!, heapDocs[parent]!)) break;
          const s = heapScores[at]!;
          const d = heapDocs[at]!;
          heapScores[at] = heapScores[parent]!;
          heapDocs[at] = heapDocs[parent]!;
          heapScores[parent] = s;
          heapDocs[parent] = d;
          at = parent;
        }
      } else if (worse(heapScores[0]!, heapDocs[0]!, score, doc)) {
        heapScores[0] = score;
        heapDocs[0] = doc;
        siftDown(0);
      }
    }
    const result: ScoredDoc[] = [];
    for (let i = 0; i < size; i++) result.push({ doc: heapDocs[i]!, score: heapScores[i]! });
    return result.sort((x, y) => y.score - x.score || x.doc - y.doc);
  }

  private codePointLength(text: string): number {
    let n = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0xd800 || c > 0xdbff) n++;
    }
    return n;
  }
}

/**
 * A lexical index filled entry by entry (for small corpora loaded at startup and for tests):
 * entries go to a builder, and the first search after an addition lays out a fresh
 * FrozenLexicalIndex. Large corpora are built once into an index folder (see IndexStore) instead.
 */
export class LexicalIndex implements Retriever {
  private readonly builder = new LexicalIndexBuilder();
  private frozen: FrozenLexicalIndex | undefined;

  get size(): number {
    return this.builder.size;
  }

  get corpusIds(): string[] {
    return this.builder.corpusIds;
  }

  add(entry: Entry, corpus: string): void {
    this.builder.add(entry, corpus);
    this.frozen = undefined;
  }

  /** The immutable index over everything added so far. */
  freeze(): FrozenLexicalIndex {
    if (!this.frozen) {
      const { arrays, meta } = this.builder.finish();
      this.frozen = new FrozenLexicalIndex(arrays, meta);
    }
    return this.frozen;
  }

  async search(query: string, options: LexicalSearchOptions): Promise<SearchHit[]> {
    return this.freeze().searchSync(query, options);
  }

  searchSync(query: string, options: LexicalSearchOptions): SearchHit[] {
    return this.freeze().searchSync(query, options);
  }
}

/**
 * Reads `["id","gloss",tags,…` from the bytes of a record's JSON array, start to end: two string
 * literals and a `null` or an array of strings, decoding only those bytes (variants can be long, and a
 * hit never shows them). The scan works on UTF-8 bytes: quote, backslash and bracket bytes never occur
 * inside a multi-byte character. Anything of another shape falls back to a full parse, so it is never wrong.
 */
export function readRecordHead(bytes: Buffer, start: number, end: number): [string, string, string[] | null] {
  if (bytes[start] !== 0x5b) return fullHead(bytes, start, end);
  const idEnd = byteStringEnd(bytes, start + 1, end);
  if (idEnd < 0 || bytes[idEnd + 1] !== 0x2c) return fullHead(bytes, start, end);
  const glossEnd = byteStringEnd(bytes, idEnd + 2, end);
  if (glossEnd < 0 || bytes[glossEnd + 1] !== 0x2c) return fullHead(bytes, start, end);
  const id = byteStringValue(bytes, start + 1, idEnd);
  const gloss = byteStringValue(bytes, idEnd + 2, glossEnd);
  const tagsStart = glossEnd + 2;
  if (bytes[tagsStart] === 0x6e) return [id, gloss, null];
  if (bytes[tagsStart] !== 0x5b) return fullHead(bytes, start, end);
  let i = tagsStart + 1;
  while (i < end && bytes[i] !== 0x5d) {
    if (bytes[i] === 0x22) {
      i = byteStringEnd(bytes, i, end);
      if (i < 0) return fullHead(bytes, start, end);
    }
    i++;
  }
  return [id, gloss, JSON.parse(bytes.toString("utf8", tagsStart, i + 1)) as string[]];
}

/** Index of the closing quote of the JSON string literal that opens at `open` (before `end`), or -1. */
function byteStringEnd(bytes: Uint8Array, open: number, end: number): number {
  if (bytes[open] !== 0x22) return -1;
  for (let i = open + 1; i < end; i++) {
    const c = bytes[i];
    if (c === 0x5c) i++;
    else if (c === 0x22) return i;
  }
  return -1;
}

/** The value of the JSON string literal bytes[open..close]; without escapes it is the bytes between the quotes. */
function byteStringValue(bytes: Buffer, open: number, close: number): string {
  for (let i = open + 1; i < close; i++) {
    if (bytes[i] === 0x5c) return JSON.parse(bytes.toString("utf8", open, close + 1)) as string;
  }
  return bytes.toString("utf8", open + 1, close);
}

function fullHead(bytes: Buffer, start: number, end: number): [string, string, string[] | null] {
  const [id, gloss, tags] = JSON.parse(bytes.toString("utf8", start, end)) as [string, string, string[] | null];
  return [id, gloss, tags];
}
