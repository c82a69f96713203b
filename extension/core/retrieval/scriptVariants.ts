/**
 * Traditional/Simplified folding learnt from the dictionary itself: an entry whose headword and a
 * variant have the same length and differ only in Han characters gives a character pair per
 * position (CC-CEDICT: 內卷 / 内卷 gives 內→内). The most frequent target wins for each character,
 * and keys on both the index and the query side are folded with the map, so either script finds
 * the entry without a hand-made conversion table.
 */

const HAN = /^\p{Script=Han}$/u;

export class ScriptFoldingCollector {
  private readonly votes = new Map<number, Map<number, number>>();

  observe(headword: string, variants: readonly string[] | undefined): void {
    if (!variants) return;
    const target = Array.from(headword);
    for (const variant of variants) {
      const source = Array.from(variant);
      if (source.length !== target.length || variant === headword) continue;
      if (!source.every((c, i) => c === target[i] || (HAN.test(c) && HAN.test(target[i]!)))) continue;
      for (let i = 0; i < source.length; i++) {
        const from = source[i]!;
        const to = target[i]!;
        if (from === to) continue;
        const fromCp = from.codePointAt(0)!;
        const toCp = to.codePointAt(0)!;
        let counts = this.votes.get(fromCp);
        if (!counts) {
          counts = new Map();
          this.votes.set(fromCp, counts);
        }
        counts.set(toCp, (counts.get(toCp) ?? 0) + 1);
      }
    }
  }

  /** Pairs [from, to, …]; a character that is itself a target is never remapped, so chains cannot form. */
  finish(): Uint32Array {
    const pairs: number[] = [];
    const targets = new Set<number>();
    const best = new Map<number, number>();
    for (const [from, counts] of this.votes) {
      let top = 0;
      let topCount = 0;
      for (const [to, count] of counts) {
        if (count > topCount || (count === topCount && to < top)) {
          top = to;
          topCount = count;
        }
      }
      best.set(from, top);
      targets.add(top);
    }
    for (const [from, to] of [...best].sort((a, b) => a[0] - b[0])) {
      if (!targets.has(from)) pairs.push(from, to);
    }
    return Uint32Array.from(pairs);
  }
}

export class ScriptFolding {
  private readonly map = new Map<number, string>();

  constructor(pairs: Uint32Array) {
    for (let i = 0; i + 1 < pairs.length; i += 2) this.map.set(pairs[i]!, String.fromCodePoint(pairs[i + 1]!));
  }

  get size(): number {
    return this.map.size;
  }

  fold(key: string): string {
    if (this.map.size === 0) return key;
    let out = "";
    let changed = false;
    for (const char of key) {
      const to = this.map.get(char.codePointAt(0)!);
      if (to !== undefined) changed = true;
      out += to ?? char;
    }
    return changed ? out : key;
  }
}
