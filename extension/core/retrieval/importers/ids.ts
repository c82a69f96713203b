import { createHash } from "node:crypto";
import { normalizeText } from "../normalize";

/**
 * Stable entry ids, `<corpus>:<key>`. The key is the format's natural key when it has one (a TBX
 * concept id, a TMX tuid) and otherwise a short hash of the entry's content, so re-importing an
 * unchanged file gives the same ids and editing one record changes only that record's id.
 * Identical records within one file get `~2`, `~3`, … in file order.
 *
 * Memory: one 64-bit fingerprint per entry in a flat open-addressing table (about 11 bytes per
 * entry at the table's load factor) plus a map for the rare keys seen twice, so a 20 GB dump
 * does not hold its keys as strings.
 */
export class StableIds {
  private readonly seen = new FingerprintSet();
  private readonly repeats = new Map<string, number>();

  constructor(private readonly corpus: string) {}

  /** Id from a content hash over the fields that identify an entry (headword, pos, gloss, …). */
  forContent(fields: ReadonlyArray<string | undefined>): string {
    const canonical = fields.map((f) => normalizeText(f ?? "")).join("\u001f");
    const digest = createHash("sha1").update(canonical).digest();
    return this.unique(contentKey(digest), digest);
  }

  /** Id from a natural key the format provides. */
  forKey(naturalKey: string): string {
    return this.unique(naturalKey, createHash("sha1").update(naturalKey).digest());
  }

  private unique(key: string, digest: Buffer): string {
    const base = `${this.corpus}:${key}`;
    if (this.seen.add(digest.readUInt32BE(0), digest.readUInt32BE(4))) return base;
    const n = (this.repeats.get(key) ?? 1) + 1;
    this.repeats.set(key, n);
    return `${base}~${n}`;
  }
}

/** 8 bytes of the digest as fixed-width base36 (13 characters). */
function contentKey(digest: Buffer): string {
  return digest.readBigUInt64BE(0).toString(36).padStart(13, "0");
}

/** A set of 64-bit values held as pairs of 32-bit words; (0, 0) marks an empty slot. */
class FingerprintSet {
  private hi = new Uint32Array(1 << 12);
  private lo = new Uint32Array(1 << 12);
  private size = 0;
  private hasZero = false;

  /** Adds the value; false when it was already present. */
  add(hi: number, lo: number): boolean {
    if (hi === 0 && lo === 0) {
      const added = !this.hasZero;
      this.hasZero = true;
      return added;
    }
    if ((this.size + 1) * 4 > this.hi.length * 3) this.grow();
    const added = insert(this.hi, this.lo, hi, lo);
    if (added) this.size++;
    return added;
  }

  private grow(): void {
    const oldHi = this.hi;
    const oldLo = this.lo;
    this.hi = new Uint32Array(oldHi.length * 2);
    this.lo = new Uint32Array(oldLo.length * 2);
    for (let i = 0; i < oldHi.length; i++) {
      const h = oldHi[i]!;
      const l = oldLo[i]!;
      if (h !== 0 || l !== 0) insert(this.hi, this.lo, h, l);
    }
  }
}

function insert(his: Uint32Array, los: Uint32Array, hi: number, lo: number): boolean {
  const mask = his.length - 1;
  // The values are already uniform hash bits, so the low word is a good slot index as it is.
  for (let slot = lo & mask; ; slot = (slot + 1) & mask) {
    const h = his[slot]!;
    const l = los[slot]!;
    if (h === 0 && l === 0) {
      his[slot] = hi;
      los[slot] = lo;
      return true;
    }
    if (h === hi && l === lo) return false;
  }
}
