import { createHash } from "node:crypto";
import type { Entry } from "../types";

/** One entry as the dense index sees it: its ordinal (the vector's label), its id and the text that is encoded. */
export interface DensePassage {
  ordinal: number;
  id: string;
  text: string;
}

/**
 * The text encoded for an entry: headword and gloss, so a query in either language can land on it. NUL
 * never occurs in real text and is the separator the background build packs passages with.
 */
export function passageText(entry: Pick<Entry, "headword" | "gloss">): string {
  return `${entry.headword}: ${entry.gloss}`.replaceAll("\u0000", " ");
}

/** Passages for entries in corpus order (ordinal = position), as the build and the fingerprint expect them. */
export function passagesOf(entries: Iterable<Pick<Entry, "id" | "headword" | "gloss">>): DensePassage[] {
  const out: DensePassage[] = [];
  for (const entry of entries) out.push({ ordinal: out.length, id: entry.id, text: passageText(entry) });
  return out;
}

/** Identifies the encoded text: a changed gloss gets a new hash and so a new vector; an unchanged one keeps its vector. */
export function contentHash(text: string): string {
  return createHash("sha1").update(text).digest("base64url").slice(0, 16);
}

/**
 * Identifies a corpus as the index saw it: one hash over every ordinal, id and text, in ordinal order.
 * Any added, removed, moved or edited entry changes it. The texts go straight into one digest: a digest per
 * entry made this several times slower (7 s instead of 1.5 s for 425k entries on a busy 2-core machine).
 */
export function corpusFingerprint(passages: readonly DensePassage[]): string {
  const inOrder = passages.every((p, i) => i === 0 || (passages[i - 1] as DensePassage).ordinal < p.ordinal);
  const sorted = inOrder ? passages : [...passages].sort((a, b) => a.ordinal - b.ordinal);
  const hash = createHash("sha256");
  let pending = "";
  for (const p of sorted) {
    // The length prefix keeps a tab or newline inside a text from imitating another split.
    pending += `${p.ordinal}\t${p.id.length}:${p.id}\t${p.text.length}:${p.text}\n`;
    if (pending.length > 1 << 16) {
      hash.update(pending);
      pending = "";
    }
  }
  hash.update(pending);
  return hash.digest("hex");
}
