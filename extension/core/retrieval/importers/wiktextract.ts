import { basename } from "node:path";
import type { Entry } from "../types";
import { StableIds } from "./ids";
import { languageFromScript, primaryLanguage } from "./languages";
import { readLines } from "./lines";
import { type ImportReport, newReport, recordMalformed } from "./report";

export interface WiktextractOptions {
  /** Language of the glosses (the Wiktionary edition); inferred from the file name or the entries when omitted. */
  glossLang?: string;
  /** Keep translations only into these languages (all when omitted). */
  translationLangs?: string[];
  /** Most translations kept per entry, appended to the gloss (default 40). */
  maxTranslations?: number;
  /** Most usage examples kept per entry (default 5). */
  maxExamples?: number;
  /** Most extra written forms kept per entry (default 24). */
  maxVariants?: number;
}

/**
 * wiktextract / kaikki.org JSONL: one JSON object per word, part of speech and etymology. The
 * English edition and the native editions (de, fr, ja, zh, …) differ in detail; this reads the
 * fields they share and tolerates the rest. Entries without any gloss (pure form-of stubs with no
 * text) are skipped, not malformed.
 */
export async function importWiktextract(
  file: string,
  corpus: string,
  options: WiktextractOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  let glossLang = options.glossLang ?? editionFromPath(file);
  let guesses = 0;
  for await (const { line, number } of readLines(file)) {
    if (!line.trim()) {
      report.skipped++;
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      recordMalformed(report, number, `not valid JSON (${(error as Error).message})`);
      continue;
    }
    if (!isRecord(value) || typeof value.word !== "string" || !value.word.trim()) {
      recordMalformed(report, number, "a wiktextract record needs a string `word`");
      continue;
    }
    const senses = readSenses(value);
    if (senses.texts.length === 0) {
      report.skipped++;
      continue;
    }
    // The edition is one per file: settle it from the first entries that show it, then stop guessing.
    if (glossLang === undefined && guesses < 100) {
      guesses++;
      glossLang = inferGlossLang(value, senses.texts);
    }
    const word = value.word.trim();
    const lang = typeof value.lang_code === "string" ? primaryLanguage(value.lang_code) : "und";
    const pos = typeof value.pos === "string" ? value.pos : undefined;
    const sensesText =
      senses.texts.length === 1 ? senses.texts[0]! : senses.texts.map((t, i) => `${i + 1}. ${t}`).join(" ");
    const translations = formatTranslations(value, options);
    const tags = normalizeTags(senses.tags, senses.labels.concat(stringList(value.categories)));
    const examples = senses.examples.slice(0, options.maxExamples ?? 5);
    const variants = readVariants(value, word, options.maxVariants ?? 24);
    onEntry({
      id: ids.forContent([lang, word, pos, sensesText]),
      headword: word,
      ...(variants.length ? { variants } : {}),
      gloss: translations ? `${sensesText}\n${translations}` : sensesText,
      lang,
      ...(glossLang ? { glossLang } : {}),
      ...(pos ? { pos } : {}),
      ...(tags.length ? { tags } : {}),
      ...(examples.length ? { examples } : {}),
    });
    report.imported++;
  }
  return report;
}

type JsonRecord = Record<string, unknown>;

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringList(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  // Categories are strings in current dumps and {name: …} objects in older ones.
  return value.flatMap((v) =>
    typeof v === "string" ? [v] : isRecord(v) && typeof v.name === "string" ? [v.name] : [],
  );
}

function records(value: unknown): JsonRecord[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

interface Senses {
  texts: string[];
  /** Normalized `tags` of all senses. */
  tags: string[];
  /** Free-text labels (raw_tags, categories) that may name a register in the edition's language. */
  labels: string[];
  examples: string[];
}

function readSenses(value: JsonRecord): Senses {
  const out: Senses = { texts: [], tags: [], labels: [], examples: [] };
  let parent: string | undefined;
  for (const sense of records(value.senses)) {
    let glosses = stringList(sense.glosses)
      .map((g) => g.trim())
      .filter(Boolean);
    if (glosses.length === 0)
      glosses = stringList(sense.raw_glosses)
        .map((g) => g.trim())
        .filter(Boolean);
    if (glosses.length === 0) continue;
    // Sub-senses repeat their parent's gloss first; say it once.
    const own = glosses.length > 1 && glosses[0] === parent ? glosses.slice(1) : glosses;
    parent = glosses[0];
    out.texts.push(own.join(": "));
    out.tags.push(...stringList(sense.tags));
    out.labels.push(...stringList(sense.raw_tags), ...stringList(sense.categories));
    for (const example of records(sense.examples)) {
      const text = typeof example.text === "string" ? example.text.trim() : "";
      if (!text) continue;
      const translation = [example.translation, example.english].find((t) => typeof t === "string" && t.trim());
      out.examples.push(typeof translation === "string" ? `${text} — ${translation.trim()}` : text);
    }
  }
  out.tags.push(...stringList(value.tags));
  return out;
}

/** Sense tags a translator may search or filter on, under one spelling across corpora. */
const KEPT_TAGS: Record<string, string> = {
  neologism: "neologism",
  idiomatic: "idiom",
  idiom: "idiom",
  slang: "slang",
  internet: "internet",
  colloquial: "colloquial",
  informal: "informal",
  vulgar: "vulgar",
  derogatory: "derogatory",
  pejorative: "derogatory",
  offensive: "offensive",
  euphemistic: "euphemistic",
  humorous: "humorous",
  jocular: "humorous",
  ironic: "ironic",
  figuratively: "figurative",
  figurative: "figurative",
  metaphoric: "figurative",
  proverb: "proverb",
  archaic: "archaic",
  obsolete: "obsolete",
  dated: "dated",
  rare: "rare",
  literary: "literary",
  formal: "formal",
  dialectal: "dialectal",
  regional: "regional",
  nonstandard: "nonstandard",
  abbreviation: "abbreviation",
  acronym: "acronym",
  initialism: "initialism",
  honorific: "honorific",
};

/** Labels in the editions' own words (raw tags, category names) for the registers that matter most. */
const LABEL_TAGS: Array<[RegExp, string]> = [
  [
    /internet[ -]?(slang|jargon)|jerga de internet|argot internet|网络用语|網路用語|ネットスラング|интернет-сленг/i,
    "internet-slang",
  ],
  [/neolog|неологизм|新词|新詞|新語/i, "neologism"],
  [/\bidioms?\b|idiomatic|redewendung|idiotisme|modismo|成语|成語|慣用句|идиом/i, "idiom"],
  [/\bslang\b|\bargot\b|\bjerga\b|сленг|жаргон|俚语|俚語|俗語/i, "slang"],
];

function normalizeTags(tags: string[], labels: string[]): string[] {
  const out = new Set<string>();
  for (const tag of tags) {
    const kept = KEPT_TAGS[tag.toLowerCase()];
    if (kept) out.add(kept);
  }
  for (const label of labels) {
    for (const [pattern, tag] of LABEL_TAGS) {
      if (pattern.test(label)) {
        out.add(tag);
        break;
      }
    }
  }
  if (out.has("internet-slang") || (out.has("internet") && out.has("slang"))) {
    out.delete("internet");
    out.delete("slang");
    out.add("internet-slang");
  }
  return [...out];
}

/** `Translations: de: Falke, Falkin; fr: faucon` — compact, searchable, capped. */
function formatTranslations(value: JsonRecord, options: WiktextractOptions): string {
  const wanted = options.translationLangs?.map(primaryLanguage);
  const cap = options.maxTranslations ?? 40;
  const byLang = new Map<string, Set<string>>();
  let count = 0;
  const all = records(value.translations).concat(records(value.senses).flatMap((s) => records(s.translations)));
  for (const t of all) {
    const code = [t.lang_code, t.code].find((c): c is string => typeof c === "string" && c.length > 0);
    const word = typeof t.word === "string" ? t.word.trim() : "";
    if (!code || !word) continue;
    const lang = primaryLanguage(code);
    if (wanted && !wanted.includes(lang)) continue;
    const words = byLang.get(lang) ?? new Set<string>();
    if (words.has(word)) continue;
    words.add(word);
    byLang.set(lang, words);
    if (++count >= cap) break;
  }
  if (count === 0) return "";
  return `Translations: ${[...byLang].map(([lang, words]) => `${lang}: ${[...words].join(", ")}`).join("; ")}`;
}

/** Written forms that identify the word itself: scripts, readings, romanizations, alternative spellings. */
const SPELLING_TAGS = new Set([
  "canonical",
  "romanization",
  "transliteration",
  "alternative",
  "hiragana",
  "katakana",
  "kanji",
  "hanja",
  "hangeul",
  "traditional",
  "simplified",
  "Traditional-Chinese",
  "Simplified-Chinese",
  "abbreviation",
  "contraction",
]);
/** Form entries that are table scaffolding, not words. */
const NOT_A_FORM = new Set(["table-tags", "inflection-template", "class", "multiword-construction"]);

function readVariants(value: JsonRecord, word: string, cap: number): string[] {
  const spellings: string[] = [];
  const inflections: string[] = [];
  const multiword = /\s/.test(word);
  for (const form of records(value.forms)) {
    let text = typeof form.form === "string" ? form.form.trim() : "";
    const tags = stringList(form.tags);
    if (!text || text === "-" || tags.some((t) => NOT_A_FORM.has(t))) continue;
    if (tags.includes("canonical")) {
      // "走る intransitive godan": the canonical form carries head-line annotations after the word.
      if (!multiword) text = text.split(/\s+/)[0]!;
      const reading = rubyReading(text, form.ruby);
      if (reading) spellings.push(reading);
    }
    if (!multiword && /\s/.test(text)) continue;
    (tags.some((t) => SPELLING_TAGS.has(t)) ? spellings : inflections).push(text);
  }
  const out = new Set<string>();
  for (const text of spellings.concat(inflections)) {
    if (out.size >= cap) break;
    if (text !== word) out.add(text);
  }
  return [...out];
}

/** The kana reading of a Japanese form from its ruby pairs ([["楽", "たの"]] on 楽しい → たのしい). */
function rubyReading(text: string, ruby: unknown): string | undefined {
  if (!Array.isArray(ruby) || ruby.length === 0) return undefined;
  let reading = "";
  let rest = text;
  for (const pair of ruby) {
    if (!Array.isArray(pair) || typeof pair[0] !== "string" || typeof pair[1] !== "string") return undefined;
    const at = rest.indexOf(pair[0]);
    if (at < 0) return undefined;
    reading += rest.slice(0, at) + pair[1];
    rest = rest.slice(at + pair[0].length);
  }
  return reading + rest;
}

/** `de-de-extract.jsonl` (word language, edition), `dewiktionary/…`, `kaikki.org-dictionary-…` (English edition). */
export function editionFromPath(file: string): string | undefined {
  const name = basename(file).toLowerCase();
  const sample = /(?:^|[^a-z])([a-z]{2,3}|simple)-extract\.jsonl/.exec(name);
  if (sample) return sample[1] === "simple" ? "en" : sample[1];
  const wiki = /(?:^|[^a-z])([a-z]{2,3})wiktionary/.exec(file.toLowerCase());
  if (wiki) return wiki[1];
  if (name.startsWith("kaikki.org-dictionary")) return "en";
  return undefined;
}

/** Editions that wiktextract extracts; each names languages in its own language (`Deutsch`, `ラテン語`). */
const EDITIONS = ["en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "ja", "zh", "ko", "el", "cs", "sv", "tr", "vi"];
const displayNames = new Map<string, Intl.DisplayNames>();

function inferGlossLang(value: JsonRecord, texts: string[]): string | undefined {
  const byScript = languageFromScript(texts.slice(0, 3).join(" "));
  if (byScript) return byScript;
  const name = typeof value.lang === "string" ? value.lang.toLowerCase() : "";
  const code = typeof value.lang_code === "string" ? value.lang_code : "";
  if (!name || !code) return undefined;
  for (const edition of EDITIONS) {
    let names = displayNames.get(edition);
    if (!names) {
      names = new Intl.DisplayNames([edition], { type: "language", fallback: "none" });
      displayNames.set(edition, names);
    }
    let local: string | undefined;
    try {
      local = names.of(code)?.toLowerCase();
    } catch {
      // A code ICU does not accept says nothing about the edition.
      return undefined;
    }
    if (local && (local === name || name.includes(local))) return edition;
  }
  return undefined;
}
