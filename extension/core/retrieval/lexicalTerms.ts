import { tokenize } from "./normalize";
import type { Entry } from "./types";

/**
 * What the lexical engine sees of entries and queries. Exported so a benchmark can feed another
 * BM25 implementation exactly the same tokens.
 */

/**
 * Queries are cut to this many UTF-16 code units before any work, so a pasted 100 KB document
 * costs what a long paragraph does; the sentence scan and BM25 see only this prefix.
 */
export const MAX_QUERY_CHARS = 2000;

const CONTROL = /\p{Cc}+/gu;

/** The query as the engine uses it: capped, control characters removed. */
export function cleanQuery(query: string): string {
  return query.slice(0, MAX_QUERY_CHARS).replace(CONTROL, " ");
}

/** BM25 document terms: headword, gloss and tags (so "idiom" or "slang" find labelled entries). */
export function documentTerms(entry: Entry): string[] {
  const tags = entry.tags?.length ? ` ${entry.tags.join(" ")}` : "";
  return tokenize(`${entry.headword} ${entry.gloss}${tags}`);
}

const SINGLE_CJK = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]$/u;

/**
 * Distinct BM25 query terms. A CJK character that is part of a query bigram is not also searched
 * on its own: its unigram posting list is the longest there is (一, 的, の) and adds little to a
 * ranking the bigrams already decide; a lone CJK character keeps its unigram.
 */
export function queryTerms(query: string): string[] {
  const terms = [...new Set(tokenize(cleanQuery(query)))];
  const inBigram = new Set<string>();
  for (const term of terms) {
    const chars = Array.from(term);
    if (chars.length === 2 && SINGLE_CJK.test(chars[0]!) && SINGLE_CJK.test(chars[1]!)) {
      inBigram.add(chars[0]!);
      inBigram.add(chars[1]!);
    }
  }
  return inBigram.size ? terms.filter((t) => !inBigram.has(t)) : terms;
}

/** All distinct query terms, unigrams included: the tokenizer's plain output, for quality comparisons. */
export function allQueryTerms(query: string): string[] {
  return [...new Set(tokenize(cleanQuery(query)))];
}
