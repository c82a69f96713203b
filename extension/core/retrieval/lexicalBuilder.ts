import { buildHashTable, hashString, type LexicalArrays, type LexicalMeta, StringBlobWriter } from "./lexicalFormat";
import { documentTerms } from "./lexicalTerms";
import { headwordKey } from "./normalize";
import { ScriptFolding, ScriptFoldingCollector } from "./scriptVariants";
import type { Entry } from "./types";

/** A typed array that doubles when full: the builder keeps per-posting data without a JS object each. */
class Growable<T extends Int32Array | Uint32Array | Uint16Array | Uint8Array> {
  array: T;
  length = 0;

  constructor(
    private readonly make: (length: number) => T,
    capacity = 1 << 12,
  ) {
    this.array = make(capacity);
  }

  push(value: number): void {
    if (this.length === this.array.length) {
      const next = this.make(this.array.length * 2);
      next.set(this.array);
      this.array = next;
    }
    this.array[this.length++] = value;
  }

  view(): T {
    return this.array.subarray(0, this.length) as T;
  }

  /** Drops the storage (the builder is done with it). */
  release(): void {
    this.array = this.make(0);
    this.length = 0;
  }
}

const int32 = (n: number) => new Int32Array(n);
const uint32 = (n: number) => new Uint32Array(n);
const uint16 = (n: number) => new Uint16Array(n);
const uint8 = (n: number) => new Uint8Array(n);

export function keyOf(text: string): string {
  return headwordKey(text.replace(/\p{Cc}+/gu, ""));
}

/**
 * Builds the immutable lexical index from a stream of entries in one pass: per-document data is
 * appended to typed arrays, postings are laid out by a counting sort at the end. Memory stays
 * near the size of the finished index (no object per posting), which is what lets 3M entries
 * build in a few GB.
 */
export class LexicalIndexBuilder {
  private readonly headwords = new StringBlobWriter();
  private readonly records = new StringBlobWriter();
  private readonly docLang = new Growable(uint8);
  private readonly docCorpus = new Growable(uint16);
  private readonly docLength = new Growable(uint16);
  /** Per document, the start of its (term, tf) run in docTermIds/docTermTfs. */
  private readonly docTermStart = new Growable(uint32);
  private readonly docTermIds = new Growable(int32);
  private readonly docTermTfs = new Growable(uint8);
  private readonly termIds = new Map<string, number>();
  private readonly rawKeyIds = new Map<string, number>();
  private readonly keyPairKeys = new Growable(int32);
  private readonly keyPairDocs = new Growable(int32);
  private readonly langIds = new Map<string, number>();
  private readonly corpusIndex = new Map<string, number>();
  private readonly folding = new ScriptFoldingCollector();
  private readonly counts = new Map<number, number>();
  private totalLength = 0;
  private docs = 0;
  private released = false;

  get size(): number {
    return this.docs;
  }

  get corpusIds(): string[] {
    return [...this.corpusIndex.keys()];
  }

  add(entry: Entry, corpus: string): void {
    if (this.released) throw new Error("this LexicalIndexBuilder was finished with { release: true }");
    const doc = this.docs++;
    this.headwords.push(entry.headword);
    this.records.push(
      JSON.stringify([
        entry.id,
        entry.gloss,
        entry.tags ?? null,
        entry.variants ?? null,
        entry.glossLang ?? null,
        entry.pos ?? null,
      ]),
    );
    this.docLang.push(this.intern(this.langIds, entry.lang, 255, "languages"));
    this.docCorpus.push(this.intern(this.corpusIndex, corpus, 65535, "corpora"));
    this.folding.observe(entry.headword, entry.variants);

    const firstPair = this.keyPairKeys.length;
    for (const form of [entry.headword, ...(entry.variants ?? [])]) {
      const key = keyOf(form);
      if (!key) continue;
      let id = this.rawKeyIds.get(key);
      if (id === undefined) {
        id = this.rawKeyIds.size;
        this.rawKeyIds.set(key, id);
      }
      let duplicate = false;
      for (let i = firstPair; i < this.keyPairKeys.length; i++) if (this.keyPairKeys.array[i] === id) duplicate = true;
      if (duplicate) continue;
      this.keyPairKeys.push(id);
      this.keyPairDocs.push(doc);
    }

    const terms = documentTerms(entry);
    this.counts.clear();
    for (const term of terms) {
      let id = this.termIds.get(term);
      if (id === undefined) {
        id = this.termIds.size;
        this.termIds.set(term, id);
      }
      this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    }
    this.docTermStart.push(this.docTermIds.length);
    for (const [id, tf] of this.counts) {
      this.docTermIds.push(id);
      this.docTermTfs.push(Math.min(tf, 255));
    }
    const length = Math.min(terms.length, 65535);
    this.docLength.push(length);
    this.totalLength += length;
  }

  /**
   * Lays out the finished arrays. The builder stays usable (more entries can be added and finished
   * again) unless `release` is set: then each part of the builder's own state is dropped as soon as its
   * finished array exists, the largest (the record text) last, so the peak memory of a one-shot build is
   * well under the sum of both.
   */
  finish({ release = false }: { release?: boolean } = {}): { arrays: LexicalArrays; meta: LexicalMeta } {
    const termCount = this.termIds.size;
    const postings = this.postings();
    if (release) {
      this.docTermStart.release();
      this.docTermIds.release();
      this.docTermTfs.release();
    }
    const terms = this.termTable();
    if (release) this.termIds.clear();
    const keys = this.keyTables();
    if (release) {
      this.rawKeyIds.clear();
      this.keyPairKeys.release();
      this.keyPairDocs.release();
      this.released = true;
    }
    const headwords = this.headwords.finish({ release });
    const records = this.records.finish({ release });
    const arrays: LexicalArrays = {
      headwordBlob: headwords.blob,
      headwordOffsets: headwords.offsets,
      recordBlob: records.blob,
      recordOffsets: records.offsets,
      docLang: this.docLang.view().slice(),
      docCorpus: this.docCorpus.view().slice(),
      docLength: this.docLength.view().slice(),
      ...terms,
      ...postings,
      ...keys.arrays,
    };
    const meta: LexicalMeta = {
      docCount: this.docs,
      termCount,
      keyCount: keys.arrays.keyHashes.length,
      totalLength: this.totalLength,
      longestKey: keys.longestKey,
      langs: [...this.langIds.keys()],
      corpusIds: this.corpusIds,
    };
    return { arrays, meta };
  }

  private intern(table: Map<string, number>, value: string, max: number, what: string): number {
    let id = table.get(value);
    if (id === undefined) {
      if (table.size > max) throw new Error(`one lexical index holds at most ${max + 1} ${what}`);
      id = table.size;
      table.set(value, id);
    }
    return id;
  }

  private postings(): Pick<LexicalArrays, "postingStart" | "postingDocs" | "postingTfs"> {
    const termCount = this.termIds.size;
    const ids = this.docTermIds.view();
    const tfs = this.docTermTfs.view();
    const starts = this.docTermStart.view();
    const postingStart = new Uint32Array(termCount + 1);
    for (let i = 0; i < ids.length; i++) postingStart[ids[i]! + 1]!++;
    for (let t = 0; t < termCount; t++) postingStart[t + 1]! += postingStart[t]!;
    const fill = postingStart.slice(0, termCount);
    const postingDocs = new Int32Array(ids.length);
    const postingTfs = new Uint8Array(ids.length);
    for (let doc = 0; doc < this.docs; doc++) {
      const end = doc + 1 < this.docs ? starts[doc + 1]! : ids.length;
      for (let i = starts[doc]!; i < end; i++) {
        const at = fill[ids[i]!]!++;
        postingDocs[at] = doc;
        postingTfs[at] = tfs[i]!;
      }
    }
    return { postingStart, postingDocs, postingTfs };
  }

  private termTable(): Pick<LexicalArrays, "termBlob" | "termOffsets" | "termHashes" | "termTable"> {
    const writer = new StringBlobWriter();
    const termHashes = new Uint32Array(this.termIds.size);
    let i = 0;
    for (const term of this.termIds.keys()) {
      writer.push(term);
      termHashes[i++] = hashString(term);
    }
    const { blob, offsets } = writer.finish();
    return { termBlob: blob, termOffsets: offsets, termHashes, termTable: buildHashTable(termHashes) };
  }

  /** Folds raw keys with the script map learnt from the data, then sorts the distinct folded keys. */
  private keyTables(): {
    arrays: Pick<
      LexicalArrays,
      | "keyBlob"
      | "keyOffsets"
      | "keyHashes"
      | "keyLengths"
      | "keyTable"
      | "keyDocStart"
      | "keyDocs"
      | "reversedKeyBlob"
      | "reversedKeyOffsets"
      | "reversedKeyIds"
      | "scriptFolding"
    >;
    longestKey: number;
  } {
    const scriptFolding = this.folding.finish();
    const folding = new ScriptFolding(scriptFolding);
    const foldedOf = new Int32Array(this.rawKeyIds.size);
    const foldedIds = new Map<string, number>();
    for (const [raw, id] of this.rawKeyIds) {
      const folded = folding.fold(raw);
      let foldedId = foldedIds.get(folded);
      if (foldedId === undefined) {
        foldedId = foldedIds.size;
        foldedIds.set(folded, foldedId);
      }
      foldedOf[id] = foldedId;
    }
    const distinct = [...foldedIds.keys()];
    const order = distinct.map((_, i) => i).sort((a, b) => (distinct[a]! < distinct[b]! ? -1 : 1));
    const rank = new Int32Array(distinct.length);
    order.forEach((folded, sorted) => {
      rank[folded] = sorted;
    });

    const keyWriter = new StringBlobWriter();
    const keyHashes = new Uint32Array(distinct.length);
    const keyLengths = new Uint16Array(distinct.length);
    let longestKey = 0;
    order.forEach((folded, sorted) => {
      const key = distinct[folded]!;
      keyWriter.push(key);
      keyHashes[sorted] = hashString(key);
      const length = Math.min(Array.from(key).length, 65535);
      keyLengths[sorted] = length;
      if (length > longestKey) longestKey = length;
    });

    const pairKeys = this.keyPairKeys.view();
    const pairDocs = this.keyPairDocs.view();
    const keyDocStart = new Uint32Array(distinct.length + 1);
    for (let i = 0; i < pairKeys.length; i++) keyDocStart[rank[foldedOf[pairKeys[i]!]!]! + 1]!++;
    for (let k = 0; k < distinct.length; k++) keyDocStart[k + 1]! += keyDocStart[k]!;
    const fill = keyDocStart.slice(0, distinct.length);
    const keyDocsRaw = new Int32Array(pairKeys.length);
    for (let i = 0; i < pairKeys.length; i++) keyDocsRaw[fill[rank[foldedOf[pairKeys[i]!]!]!]!++] = pairDocs[i]!;
    // Two raw keys of one document can fold to one key (內卷 and 内卷): keep each document once per key.
    const keyDocs = new Int32Array(keyDocsRaw.length);
    let written = 0;
    for (let k = 0; k < distinct.length; k++) {
      const start = keyDocStart[k]!;
      const end = keyDocStart[k + 1]!;
      keyDocStart[k] = written;
      for (let i = start; i < end; i++) {
        if (i === start || keyDocsRaw[i] !== keyDocsRaw[i - 1]) keyDocs[written++] = keyDocsRaw[i]!;
      }
    }
    keyDocStart[distinct.length] = written;

    const reversed = order.map((folded, sorted) => ({
      text: Array.from(distinct[folded]!).reverse().join(""),
      sorted,
    }));
    reversed.sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
    const reversedWriter = new StringBlobWriter();
    const reversedKeyIds = new Int32Array(reversed.length);
    reversed.forEach(({ text, sorted }, i) => {
      reversedWriter.push(text);
      reversedKeyIds[i] = sorted;
    });
    const keysOut = keyWriter.finish();
    const reversedOut = reversedWriter.finish();
    return {
      arrays: {
        keyBlob: keysOut.blob,
        keyOffsets: keysOut.offsets,
        keyHashes,
        keyLengths,
        keyTable: buildHashTable(keyHashes),
        keyDocStart,
        keyDocs: keyDocs.slice(0, written),
        reversedKeyBlob: reversedOut.blob,
        reversedKeyOffsets: reversedOut.offsets,
        reversedKeyIds,
        scriptFolding,
      },
      longestKey,
    };
  }
}
