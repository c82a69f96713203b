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

export function isCjk(char: string): boolean {
  return CJK.test(char);
}

const STOPWORDS = new Set(
  "a an and are as at be by for from has have in is it its of on or sb sth that the this to was were with".split(" "),
);

/**
 * BM25 terms: CJK runs become character unigrams and bigrams (no word segmenter is needed and
 * partial matches of idioms still score); other scripts become lower-cased words minus a few stopwords.
 */
export function tokenize(text: string): string[] {
  const terms: string[] = [];
  const normalized = normalizeText(text);
  for (const match of normalized.matchAll(/[\p{L}\p{N}]+/gu)) {
    const word = match[0];
    let run = "";
    let other = "";
    const flushOther = () => {
      if (other && !STOPWORDS.has(other)) terms.push(other);
      other = "";
    };
    const flushRun = () => {
      const chars = [...run];
      for (let i = 0; i < chars.length; i++) {
        terms.push(chars[i]!);
        if (i + 1 < chars.length) terms.push(chars[i]! + chars[i + 1]!);
      }
      run = "";
    };
    for (const char of word) {
      if (isCjk(char)) {
        flushOther();
        run += char;
      } else {
        flushRun();
        other += char;
      }
    }
    flushRun();
    flushOther();
  }
  return terms;
}
