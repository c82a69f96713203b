/**
 * The lexical index's binary layout: every array is one little-endian file that is read into a
 * Buffer and wrapped as a typed array at load, so opening a multi-million-entry index creates no
 * per-entry objects. Strings live in UTF-8 blobs addressed by Uint32 byte offsets.
 */

/** Bumped whenever the layout or the meaning of a file changes; an index of another version is rebuilt. */
export const LEXICAL_FORMAT_VERSION = 1;

export interface LexicalMeta {
  docCount: number;
  termCount: number;
  keyCount: number;
  totalLength: number;
  /** Longest headword key in code points: the sentence scan never looks at longer substrings. */
  longestKey: number;
  langs: string[];
  corpusIds: string[];
}

/** The arrays of a built index; `LexicalIndexFiles` names the file each is stored in. */
export interface LexicalArrays {
  /** Per document: headword (kept apart from the record so exact-match checks decode only it). */
  headwordBlob: Uint8Array;
  headwordOffsets: Uint32Array;
  /** Per document: JSON `[id, gloss, tags, variants, glossLang, pos]`, decoded only for returned hits. */
  recordBlob: Uint8Array;
  recordOffsets: Uint32Array;
  docLang: Uint8Array;
  docCorpus: Uint16Array;
  docLength: Uint16Array;
  /** BM25 term dictionary: terms, their hashes and an open-addressing table of term index + 1. */
  termBlob: Uint8Array;
  termOffsets: Uint32Array;
  termHashes: Uint32Array;
  termTable: Int32Array;
  /** Postings of term t: docs[postingStart[t] .. postingStart[t+1]), ascending, with term frequencies. */
  postingStart: Uint32Array;
  postingDocs: Int32Array;
  postingTfs: Uint8Array;
  /** Headword keys, sorted (JS string order), with hashes, lengths in code points and a hash table. */
  keyBlob: Uint8Array;
  keyOffsets: Uint32Array;
  keyHashes: Uint32Array;
  keyLengths: Uint16Array;
  keyTable: Int32Array;
  keyDocStart: Uint32Array;
  keyDocs: Int32Array;
  /** Keys reversed by code point, sorted, and the key each one is: finds keys by suffix for fuzzy search. */
  reversedKeyBlob: Uint8Array;
  reversedKeyOffsets: Uint32Array;
  reversedKeyIds: Int32Array;
  /** Traditional→Simplified code point pairs derived from the data: [from0, to0, from1, to1, …]. */
  scriptFolding: Uint32Array;
}

type ArrayName = keyof LexicalArrays;
type ArrayCtor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => LexicalArrays[ArrayName];

const LAYOUT: Record<ArrayName, { file: string; ctor: ArrayCtor; bytes: number }> = {
  headwordBlob: { file: "headwords.utf8", ctor: Uint8Array, bytes: 1 },
  headwordOffsets: { file: "headwords.u32", ctor: Uint32Array, bytes: 4 },
  recordBlob: { file: "records.utf8", ctor: Uint8Array, bytes: 1 },
  recordOffsets: { file: "records.u32", ctor: Uint32Array, bytes: 4 },
  docLang: { file: "doc-lang.u8", ctor: Uint8Array, bytes: 1 },
  docCorpus: { file: "doc-corpus.u16", ctor: Uint16Array, bytes: 2 },
  docLength: { file: "doc-length.u16", ctor: Uint16Array, bytes: 2 },
  termBlob: { file: "terms.utf8", ctor: Uint8Array, bytes: 1 },
  termOffsets: { file: "terms.u32", ctor: Uint32Array, bytes: 4 },
  termHashes: { file: "term-hashes.u32", ctor: Uint32Array, bytes: 4 },
  termTable: { file: "term-table.i32", ctor: Int32Array, bytes: 4 },
  postingStart: { file: "posting-start.u32", ctor: Uint32Array, bytes: 4 },
  postingDocs: { file: "posting-docs.i32", ctor: Int32Array, bytes: 4 },
  postingTfs: { file: "posting-tfs.u8", ctor: Uint8Array, bytes: 1 },
  keyBlob: { file: "keys.utf8", ctor: Uint8Array, bytes: 1 },
  keyOffsets: { file: "keys.u32", ctor: Uint32Array, bytes: 4 },
  keyHashes: { file: "key-hashes.u32", ctor: Uint32Array, bytes: 4 },
  keyLengths: { file: "key-lengths.u16", ctor: Uint16Array, bytes: 2 },
  keyTable: { file: "key-table.i32", ctor: Int32Array, bytes: 4 },
  keyDocStart: { file: "key-doc-start.u32", ctor: Uint32Array, bytes: 4 },
  keyDocs: { file: "key-docs.i32", ctor: Int32Array, bytes: 4 },
  reversedKeyBlob: { file: "reversed-keys.utf8", ctor: Uint8Array, bytes: 1 },
  reversedKeyOffsets: { file: "reversed-keys.u32", ctor: Uint32Array, bytes: 4 },
  reversedKeyIds: { file: "reversed-key-ids.i32", ctor: Int32Array, bytes: 4 },
  scriptFolding: { file: "script-folding.u32", ctor: Uint32Array, bytes: 4 },
};

export const LEXICAL_META_FILE = "lexical-meta.json";

/** File name and contents of each array, for writing. */
export function lexicalFiles(arrays: LexicalArrays, meta: LexicalMeta): Array<{ name: string; data: Uint8Array }> {
  const files = (Object.keys(LAYOUT) as ArrayName[]).map((name) => {
    const array = arrays[name];
    return { name: LAYOUT[name].file, data: new Uint8Array(array.buffer, array.byteOffset, array.byteLength) };
  });
  files.push({ name: LEXICAL_META_FILE, data: Buffer.from(JSON.stringify(meta)) });
  return files;
}

export function lexicalFileNames(): string[] {
  return [...Object.values(LAYOUT).map((l) => l.file), LEXICAL_META_FILE];
}

/**
 * Wraps loaded file contents as typed arrays. Throws with the file's name when a size is not a
 * whole number of elements (a truncated file); the caller turns that into a rebuild offer.
 */
export function wrapLexicalFiles(read: (file: string) => Buffer): { arrays: LexicalArrays; meta: LexicalMeta } {
  const arrays = {} as Record<ArrayName, LexicalArrays[ArrayName]>;
  for (const name of Object.keys(LAYOUT) as ArrayName[]) {
    const { file, ctor, bytes } = LAYOUT[name];
    let data = read(file);
    if (data.byteLength % bytes !== 0) throw new Error(`${file} is ${data.byteLength} bytes, not a whole array`);
    // Small files come from Node's shared pool at arbitrary offsets; typed arrays need aligned ones.
    if (data.byteOffset % bytes !== 0) data = Buffer.from(data);
    arrays[name] = new ctor(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength / bytes);
  }
  const meta = JSON.parse(read(LEXICAL_META_FILE).toString("utf8")) as LexicalMeta;
  return { arrays: arrays as LexicalArrays, meta };
}

/** FNV-1a over code points; the same function hashes keys at build time and substrings at query time. */
export function hashString(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    const cp = text.codePointAt(i)!;
    if (cp > 0xffff) i++;
    hash = Math.imul(hash ^ cp, 0x01000193);
  }
  return hash >>> 0;
}

export function extendHash(hash: number, codePoint: number): number {
  return Math.imul(hash ^ codePoint, 0x01000193) >>> 0;
}

export const EMPTY_HASH = 0x811c9dc5;

/** An open-addressing table (linear probing, load ≤ 0.5) of index + 1, keyed by the given hashes. */
export function buildHashTable(hashes: Uint32Array): Int32Array {
  let size = 16;
  while (size < hashes.length * 2) size *= 2;
  const table = new Int32Array(size);
  const mask = size - 1;
  for (let i = 0; i < hashes.length; i++) {
    let slot = hashes[i]! & mask;
    while (table[slot] !== 0) slot = (slot + 1) & mask;
    table[slot] = i + 1;
  }
  return table;
}

/** Read access to a UTF-8 string blob. */
export class StringTable {
  /** One Buffer view over the blob, made once: a view per lookup cost an allocation on the hot path. */
  private readonly text: Buffer;

  constructor(
    blob: Uint8Array,
    private readonly offsets: Uint32Array,
  ) {
    this.text = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  }

  get count(): number {
    return this.offsets.length - 1;
  }

  get(index: number): string {
    return this.text.toString("utf8", this.offsets[index]!, this.offsets[index + 1]!);
  }

  /** First index whose string is ≥ `text` in JS string order (the table must be sorted that way). */
  lowerBound(text: string): number {
    let low = 0;
    let high = this.count;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.get(mid) < text) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/** Appends strings to a UTF-8 blob in chunks, recording offsets; refuses to pass the Uint32 offset range. */
export class StringBlobWriter {
  private readonly chunks: Buffer[] = [];
  private current = Buffer.allocUnsafe(1 << 20);
  private used = 0;
  private total = 0;
  readonly offsets: number[] = [0];

  push(text: string): void {
    const need = Buffer.byteLength(text);
    if (this.total + need > 0xffffffff)
      throw new Error("string blob over 4 GiB: split the corpus into several indexes");
    if (this.used + need > this.current.length) {
      this.chunks.push(this.current.subarray(0, this.used));
      this.current = Buffer.allocUnsafe(Math.max(1 << 20, need));
      this.used = 0;
    }
    this.used += this.current.write(text, this.used);
    this.total += need;
    this.offsets.push(this.total);
  }

  /**
   * The blob and its offsets. With `release`, each chunk is let go as soon as it is copied (so a large blob
   * is not held twice) and the writer must not be used again.
   */
  finish({ release = false }: { release?: boolean } = {}): { blob: Uint8Array; offsets: Uint32Array } {
    if (!release) {
      const blob = Buffer.concat([...this.chunks, this.current.subarray(0, this.used)]);
      return { blob, offsets: Uint32Array.from(this.offsets) };
    }
    this.chunks.push(this.current.subarray(0, this.used));
    this.current = Buffer.alloc(0);
    this.used = 0;
    const blob = Buffer.allocUnsafe(this.total);
    let at = 0;
    while (this.chunks.length > 0) {
      const chunk = this.chunks.shift()!;
      chunk.copy(blob, at);
      at += chunk.length;
    }
    const offsets = Uint32Array.from(this.offsets);
    this.offsets.length = 0;
    return { blob, offsets };
  }
}
