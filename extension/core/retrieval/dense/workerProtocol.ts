import type { DenseBuildProgress, DenseBuildRequest, DenseBuildResult } from "./denseBuild";
import type { SentenceEncoderOptions } from "./encoder";
import type { DensePassage } from "./passages";

/**
 * Passages packed for postMessage: two strings and a typed array clone in one copy each, where an array of
 * 400k objects would keep the sending thread busy for a noticeable time.
 */
export interface PackedPassages {
  ordinals: Uint32Array;
  ids: string;
  texts: string;
}

const SEPARATOR = "\u0000";

export function packPassages(passages: readonly DensePassage[]): PackedPassages {
  const ordinals = new Uint32Array(passages.length);
  const ids: string[] = [];
  const texts: string[] = [];
  passages.forEach((p, i) => {
    ordinals[i] = p.ordinal;
    ids.push(p.id.replaceAll(SEPARATOR, " "));
    texts.push(p.text.replaceAll(SEPARATOR, " "));
  });
  return { ordinals, ids: ids.join(SEPARATOR), texts: texts.join(SEPARATOR) };
}

export function unpackPassages(packed: PackedPassages): DensePassage[] {
  if (packed.ordinals.length === 0) return [];
  const ids = packed.ids.split(SEPARATOR);
  const texts = packed.texts.split(SEPARATOR);
  return Array.from(packed.ordinals, (ordinal, i) => ({ ordinal, id: ids[i] ?? "", text: texts[i] ?? "" }));
}

/**
 * Where the worker gets its passages: packed by the caller, or read by the worker itself from a lexical
 * index folder (every entry, in order), so the caller's thread never walks a large corpus.
 */
export type PassageSource = { packed: PackedPassages } | { lexicalIndex: string };

export type WorkerRequest =
  | {
      type: "start";
      request: Omit<DenseBuildRequest, "passages"> & PassageSource;
      encoder: SentenceEncoderOptions;
    }
  | { type: "abort" };

export type WorkerReply =
  | { type: "progress"; progress: DenseBuildProgress }
  | { type: "done"; result: DenseBuildResult }
  | { type: "cancelled"; progress: { done: number; total: number } }
  | { type: "failed"; error: { name: string; message: string; code?: string } };
