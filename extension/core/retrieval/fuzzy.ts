import type { StringTable } from "./lexicalFormat";

/**
 * Fuzzy headword search over sorted keys, by the pigeonhole principle: a key within d edits of
 * the query keeps one of d + 1 pieces of the query intact. With sorted keys and sorted reversed
 * keys, the first and the last piece are found by binary search; Levenshtein distance, bounded
 * by d, then checks each candidate. Two-edit matches are found when at least one edit falls in
 * the middle third (edits in both the first and the last third are not found).
 * A query may also match the start of a longer key (a typo in the first half of an idiom).
 */

/** Edits allowed for a query of this many code points: none for short keys, where one edit matches everything. */
export function maxEditsFor(length: number): number {
  if (length >= 9) return 2;
  if (length >= 4) return 1;
  return 0;
}

/** Candidates examined per piece: bounds the work for short pieces shared by many keys. */
const MAX_CANDIDATES = 4000;

export interface FuzzyMatch {
  key: number;
  distance: number;
  /** True when the query matched only the start of the key. */
  prefix: boolean;
  keyLength: number;
}

export class FuzzyMatcher {
  private readonly row: Int32Array;
  private readonly previous: Int32Array;

  constructor(
    private readonly keys: StringTable,
    private readonly reversedKeys: StringTable,
    private readonly reversedKeyIds: Int32Array,
    private readonly longestKey: number,
  ) {
    this.row = new Int32Array(longestKey + 1);
    this.previous = new Int32Array(longestKey + 1);
  }

  find(query: string, limit: number): FuzzyMatch[] {
    const chars = Array.from(query, (c) => c.codePointAt(0)!);
    const edits = maxEditsFor(chars.length);
    if (edits === 0 || chars.length > this.longestKey + edits) return [];
    const pieceLength = Math.ceil(chars.length / (edits + 1));
    const head = String.fromCodePoint(...chars.slice(0, pieceLength));
    const tail = String.fromCodePoint(...chars.slice(chars.length - pieceLength).reverse());
    const best = new Map<number, FuzzyMatch>();
    const consider = (key: number, text: string) => {
      if (best.has(key)) return;
      const candidate = Array.from(text, (c) => c.codePointAt(0)!);
      const match = this.distance(chars, candidate, edits);
      if (match) best.set(key, { key, ...match, keyLength: candidate.length });
    };
    for (let i = this.keys.lowerBound(head), seen = 0; i < this.keys.count && seen < MAX_CANDIDATES; i++, seen++) {
      const text = this.keys.get(i);
      if (!text.startsWith(head)) break;
      consider(i, text);
    }
    const reversed = this.reversedKeys;
    for (let i = reversed.lowerBound(tail), seen = 0; i < reversed.count && seen < MAX_CANDIDATES; i++, seen++) {
      const text = reversed.get(i);
      if (!text.startsWith(tail)) break;
      const key = this.reversedKeyIds[i]!;
      if (!best.has(key)) consider(key, this.keys.get(key));
    }
    return [...best.values()]
      .sort((a, b) => a.distance - b.distance || Number(a.prefix) - Number(b.prefix) || a.keyLength - b.keyLength)
      .slice(0, limit);
  }

  /**
   * Levenshtein distance of query to key (whole) and to the key's best prefix, abandoned as soon as
   * a row exceeds `max`. Exact matches (distance 0 to the whole key) are the headword lookup's job.
   */
  private distance(query: number[], key: number[], max: number): { distance: number; prefix: boolean } | null {
    if (key.length > this.longestKey) return null;
    let previous = this.previous;
    let row = this.row;
    for (let j = 0; j <= key.length; j++) previous[j] = j;
    for (let i = 1; i <= query.length; i++) {
      row[0] = i;
      let rowMin = i;
      const q = query[i - 1]!;
      for (let j = 1; j <= key.length; j++) {
        const cost = q === key[j - 1] ? 0 : 1;
        const value = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
        row[j] = value;
        if (value < rowMin) rowMin = value;
      }
      if (rowMin > max) return null;
      const swap = previous;
      previous = row;
      row = swap;
    }
    const whole = previous[key.length]!;
    if (whole <= max) return whole === 0 ? null : { distance: whole, prefix: false };
    let prefixBest = max + 1;
    for (let j = 1; j < key.length; j++) if (previous[j]! < prefixBest) prefixBest = previous[j]!;
    // A prefix match must cover at least half the key, or any short query would match every long key.
    return prefixBest <= max && query.length * 2 >= key.length ? { distance: prefixBest, prefix: true } : null;
  }
}
