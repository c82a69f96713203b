/**
 * Text normalization shared by indexing and querying, so both sides agree:
 * NFKC (folds full-width forms and compatibility characters), case folding, whitespace collapsed.
 */
export function normalizeText(text: string): string {
  return text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim();
}

/** Headword key: normalized and with punctuation and spaces removed, so "狗咬吕洞宾，不识好人心" ≈ "狗咬吕洞宾不识好人心". */
export function headwordKey(text: string): string {
  return normalizeText(text).replace(/[\p{P}\p{S}\s]+/gu, "");
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

/** Every Han, kana and Hangul code point is at or above U+1100 (Hangul Jamo): a cheap first test. */
const FIRST_CJK_CODE_POINT = 0x1100;

export function isCjk(char: string): boolean {
  return (char.codePointAt(0) ?? 0) >= FIRST_CJK_CODE_POINT && CJK.test(char);
}

const STOPWORDS = new Set(
  "a an and are as at be by for from has have in is it its of on or sb sth that the this to was were with".split(" "),
);

const WORD = /[\p{L}\p{N}]+/gu;

/**
 * BM25 terms: CJK runs become character unigrams and bigrams (no word segmenter is needed and
 * partial matches of idioms still score); other scripts become lower-cased words minus a few stopwords.
 * This runs once per entry when an index is built, so it avoids per-character allocation.
 */
export function tokenize(text: string): string[] {
  const terms: string[] = [];
  const normalized = normalizeText(text);
  for (const match of normalized.matchAll(WORD)) {
    const word = match[0];
    let otherStart = -1;
    let previousCjk = "";
    let i = 0;
    while (i < word.length) {
      const code = word.codePointAt(i) ?? 0;
      const width = code > 0xffff ? 2 : 1;
      const cjk = code >= FIRST_CJK_CODE_POINT && CJK.test(word.slice(i, i + width));
      if (cjk) {
        if (otherStart >= 0) {
          pushWord(terms, word.slice(otherStart, i));
          otherStart = -1;
        }
        const char = word.slice(i, i + width);
        terms.push(char);
        if (previousCjk) terms.splice(terms.length - 1, 0, previousCjk + char);
        previousCjk = char;
      } else {
        previousCjk = "";
        if (otherStart < 0) otherStart = i;
      }
      i += width;
    }
    if (otherStart >= 0) pushWord(terms, word.slice(otherStart));
  }
  return terms;
}

function pushWord(terms: string[], word: string): void {
  if (!STOPWORDS.has(word)) terms.push(word);
}
