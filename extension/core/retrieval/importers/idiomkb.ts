import { basename } from "node:path";
import type { Entry } from "../types";
import { StableIds } from "./ids";
import { readJsonRecords } from "./jsonRecords";
import { languageFromScript, primaryLanguage } from "./languages";
import { type ImportReport, newReport, recordMalformed } from "./report";

export interface IdiomKbOptions {
  /** Language of the idioms; from the record, the file name (`zh_idioms.json`) or the idiom's script when omitted. */
  sourceLang?: string;
  /** Meaning language shown first; English, else the first one given, when omitted. */
  targetLang?: string;
}

const IDIOM_KEYS = ["idiom", "Idiom", "phrase", "expression"];
const PLAIN_MEANING_KEYS = ["meaning", "figurative_meaning", "explanation", "definition"];

/**
 * IdiomKB-style idiom collections (Li et al.: an idiom with its figurative meaning in several
 * languages): a JSON array, JSON Lines, or an object keyed by idiom. Records look like
 * `{"idiom": "…", "en_meaning": "…", "zh_meaning": "…"}`; meanings may also be keyed `meaning_<lang>`,
 * given as a `meanings` object keyed by language, or as a plain `meaning` in the target language.
 * Every entry is tagged "idiom".
 */
export async function importIdiomKb(
  file: string,
  corpus: string,
  options: IdiomKbOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  const fileLang = languageFromName(file);
  const preferred = primaryLanguage(options.targetLang ?? "en");
  for await (const record of readJsonRecords(file)) {
    if (!record.ok) {
      recordMalformed(report, record.line, record.reason);
      continue;
    }
    const value = record.value;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      recordMalformed(report, record.line, "an idiom record must be a JSON object");
      continue;
    }
    const fields = value as Record<string, unknown>;
    const idiom =
      (IDIOM_KEYS.map((k) => fields[k]).find((v) => typeof v === "string") as string | undefined) ?? record.key;
    if (!idiom?.trim()) {
      recordMalformed(report, record.line, `no idiom: expected one of ${IDIOM_KEYS.join(", ")}`);
      continue;
    }
    const meanings = readMeanings(fields, options.targetLang);
    if (meanings.size === 0) {
      report.skipped++;
      continue;
    }
    const ordered = [...meanings].sort(([a], [b]) => Number(b === preferred) - Number(a === preferred));
    const [glossLang] = ordered[0]!;
    const gloss = ordered.length === 1 ? ordered[0]![1] : ordered.map(([lang, text]) => `${lang}: ${text}`).join("\n");
    const recordLang = [fields.lang, fields.language].find((v) => typeof v === "string") as string | undefined;
    const lang = primaryLanguage(options.sourceLang ?? recordLang ?? fileLang ?? languageFromScript(idiom) ?? "en");
    const tags = new Set(["idiom", ...strings(fields.tags).map((t) => t.toLowerCase())]);
    const examples = strings(fields.examples ?? fields.example);
    onEntry({
      id: ids.forContent([lang, idiom, gloss]),
      headword: idiom.trim(),
      gloss,
      lang,
      ...(glossLang !== "und" ? { glossLang } : {}),
      tags: [...tags],
      ...(examples.length ? { examples } : {}),
    });
    report.imported++;
  }
  return report;
}

function strings(value: unknown): string[] {
  if (typeof value === "string") return value.trim() ? [value.trim()] : [];
  if (!Array.isArray(value)) return [];
  return value.filter((v): v is string => typeof v === "string" && v.trim().length > 0).map((v) => v.trim());
}

/** Meanings by language, in record order. */
function readMeanings(fields: Record<string, unknown>, targetLang: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const add = (lang: string, value: unknown) => {
    const text = strings(value).join("; ");
    if (text && !out.has(lang)) out.set(lang, text);
  };
  for (const [key, value] of Object.entries(fields)) {
    const keyed = /^([a-z]{2,3}(?:-[A-Za-z]+)?)_meaning$|^meaning_([a-z]{2,3}(?:-[A-Za-z]+)?)$/.exec(key);
    if (keyed) add(primaryLanguage(keyed[1] ?? keyed[2]!), value);
    else if (key === "meanings" && typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const [lang, text] of Object.entries(value)) add(primaryLanguage(lang), text);
    } else if (key === "meanings") add(targetLang ? primaryLanguage(targetLang) : "und", value);
  }
  for (const key of PLAIN_MEANING_KEYS) {
    if (fields[key] !== undefined) add(targetLang ? primaryLanguage(targetLang) : "und", fields[key]);
  }
  return out;
}

/** `zh_idioms.json`, `idiomkb-ja.jsonl` → the language the name gives. */
function languageFromName(file: string): string | undefined {
  const m = /(?:^|[^a-z])(en|zh|ja|ko|de|fr|es|it|ru|pt)(?:[^a-z]|$)/.exec(basename(file).toLowerCase());
  return m?.[1];
}
