/** ISO 639-2/3 codes as used in file names (FreeDict's `eng-jpn`) → the BCP-47 primary tag. */
const THREE_TO_TWO: Record<string, string> = {
  afr: "af",
  ara: "ar",
  bos: "bs",
  bre: "br",
  bul: "bg",
  cat: "ca",
  ces: "cs",
  cze: "cs",
  chi: "zh",
  cmn: "zh",
  cym: "cy",
  dan: "da",
  deu: "de",
  ger: "de",
  dut: "nl",
  ell: "el",
  gre: "el",
  eng: "en",
  epo: "eo",
  est: "et",
  eus: "eu",
  fas: "fa",
  per: "fa",
  fin: "fi",
  fra: "fr",
  fre: "fr",
  gla: "gd",
  gle: "ga",
  glg: "gl",
  heb: "he",
  hin: "hi",
  hrv: "hr",
  hun: "hu",
  hye: "hy",
  ind: "id",
  isl: "is",
  ita: "it",
  jpn: "ja",
  kor: "ko",
  kur: "ku",
  lat: "la",
  lav: "lv",
  lit: "lt",
  mkd: "mk",
  mlt: "mt",
  msa: "ms",
  nld: "nl",
  nno: "nn",
  nob: "nb",
  nor: "no",
  oci: "oc",
  pol: "pl",
  por: "pt",
  ron: "ro",
  rum: "ro",
  rus: "ru",
  slk: "sk",
  slv: "sl",
  spa: "es",
  sqi: "sq",
  alb: "sq",
  srp: "sr",
  swa: "sw",
  swe: "sv",
  tha: "th",
  tur: "tr",
  ukr: "uk",
  vie: "vi",
  zho: "zh",
};

/** A language code as the primary BCP-47 subtag: `en-US` → `en`, `jpn` → `ja`, `ZH_cn` → `zh`. */
export function primaryLanguage(code: string): string {
  const primary = code.trim().toLowerCase().split(/[-_]/)[0] ?? "";
  return THREE_TO_TWO[primary] ?? primary;
}

/** True when a tag such as `de-DE` belongs to the language `de`. */
export function sameLanguage(tag: string, language: string): boolean {
  return primaryLanguage(tag) === primaryLanguage(language);
}

const SCRIPTS: Array<[RegExp, string]> = [
  [/[\p{Script=Hiragana}\p{Script=Katakana}]/u, "ja"],
  [/\p{Script=Hangul}/u, "ko"],
  [/\p{Script=Han}/u, "zh"],
  [/\p{Script=Cyrillic}/u, "ru"],
  [/\p{Script=Greek}/u, "el"],
  [/\p{Script=Thai}/u, "th"],
  [/\p{Script=Arabic}/u, "ar"],
  [/\p{Script=Hebrew}/u, "he"],
  [/\p{Script=Devanagari}/u, "hi"],
];
const LATIN = /\p{Script=Latin}/u;

/**
 * The language a text's script points to, for scripts that mostly belong to one language, when
 * that script outweighs Latin letters (an English gloss quoting one Greek word stays undecided).
 * Kana anywhere makes Han text Japanese, because Japanese mixes both.
 */
export function languageFromScript(text: string): string | undefined {
  const counts = new Map<string, number>();
  let latin = 0;
  for (const char of text.slice(0, 300)) {
    if (LATIN.test(char)) {
      latin++;
      continue;
    }
    const hit = SCRIPTS.find(([script]) => script.test(char));
    if (hit) counts.set(hit[1], (counts.get(hit[1]) ?? 0) + 1);
  }
  if (counts.has("ja")) counts.set("ja", (counts.get("ja") ?? 0) + (counts.get("zh") ?? 0));
  let best: string | undefined;
  let bestCount = latin;
  for (const [lang, count] of counts) {
    if (lang === "zh" && counts.has("ja")) continue;
    if (count > bestCount) {
      best = lang;
      bestCount = count;
    }
  }
  return best;
}
