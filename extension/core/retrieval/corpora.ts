import { createWriteStream } from "node:fs";
import { mkdir, open, rename, stat } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { readByteLines } from "./importers/byteLines";
import { importCedict } from "./importers/cedict";
import { importDelimited } from "./importers/delimited";
import { importDictd } from "./importers/dictd";
import { importDocuments } from "./importers/documents";
import { importEdict } from "./importers/edict";
import { importIdiomKb } from "./importers/idiomkb";
import { readJsonRecords } from "./importers/jsonRecords";
import { readLines } from "./importers/lines";
import { type ImportReport, newReport, recordMalformed } from "./importers/report";
import { importTbx } from "./importers/tbx";
import { importTmx } from "./importers/tmx";
import { importWiktextract } from "./importers/wiktextract";
import { LexicalIndex } from "./lexical";
import type { Entry } from "./types";

export type CorpusFormat =
  | "cedict"
  | "edict"
  | "dictd"
  | "tsv"
  | "csv"
  | "jsonl"
  | "wiktextract"
  | "tbx"
  | "tmx"
  | "idiomkb"
  | "documents";

export interface CorpusSpec {
  path: string;
  /** Detected from the file when omitted. */
  format?: CorpusFormat;
  /** Defaults to the file name without extensions. */
  id?: string;
  /** Languages for glossaries whose file does not name them. */
  sourceLang?: string;
  targetLang?: string;
}

export function corpusId(spec: CorpusSpec): string {
  return (
    spec.id ??
    basename(spec.path)
      // A dictd pair (x.index + x.dict.dz) names one corpus, whichever of its files is given.
      .replace(/\.(dict\.dz|dict|index)$/i, "")
      .replace(/\.(gz)$/i, "")
      .replace(/\.[^.]+$/, "")
  );
}

/**
 * The format of a corpus file (or folder of documents): by extension where it is unambiguous, by
 * content where it is not (CC-CEDICT and EDICT lines, wiktextract records in .jsonl).
 */
export async function detectFormat(path: string): Promise<CorpusFormat> {
  if ((await stat(path)).isDirectory()) return "documents";
  const name = path.toLowerCase().replace(/\.gz$/, "");
  if (name.endsWith(".tsv")) return "tsv";
  if (name.endsWith(".csv")) return "csv";
  if (name.endsWith(".tbx")) return "tbx";
  if (name.endsWith(".tmx")) return "tmx";
  if (/\.(index|dict\.dz|dict)$/.test(name)) return "dictd";
  if (name.endsWith(".json")) return "idiomkb";
  if (name.endsWith(".jsonl")) return sniffJsonl(path);
  const shape = await sniffDictionaryLines(path);
  if (shape) return shape;
  if (/(^|[/\\])edict2?$/.test(name)) return "edict";
  if (name.endsWith(".u8")) return "cedict";
  if (/\.(md|markdown|txt)$/.test(name)) return "documents";
  throw new Error(
    `Cannot tell the format of ${path}: use a CC-CEDICT (.u8), EDICT, dictd (.index/.dict.dz), wiktextract or entry .jsonl, ` +
      ".json (IdiomKB), .tsv, .csv, .tbx, .tmx, .txt/.md file or a folder of documents, or name the format.",
  );
}

/** wiktextract records have `word` and `senses`; IdiomKB records an `idiom`; anything else is Glossa entry JSONL. */
async function sniffJsonl(path: string): Promise<CorpusFormat> {
  let tries = 0;
  for await (const { line } of readLines(path)) {
    if (!line.trim()) continue;
    try {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (typeof record.word === "string" && Array.isArray(record.senses)) return "wiktextract";
      if (typeof record.idiom === "string") return "idiomkb";
      return "jsonl";
    } catch {
      if (++tries >= 5) break;
    }
  }
  return "jsonl";
}

const CEDICT_LINE = /^\S+ \S+ \[[^\]]*\] \//;
const EDICT_LINE = /^\S+(?: \[[^\]]*\])? \/.+\/\s*$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const eucJp = new TextDecoder("euc-jp", { fatal: true });

/** CC-CEDICT or EDICT from their first lines (EDICT is usually EUC-JP, so lines are read as bytes). */
async function sniffDictionaryLines(path: string): Promise<CorpusFormat | undefined> {
  let edictLines = 0;
  for await (const { bytes, number } of readByteLines(path)) {
    let line: string;
    try {
      line = utf8.decode(bytes);
    } catch {
      try {
        line = eucJp.decode(bytes);
      } catch {
        return undefined;
      }
    }
    if (/CC-CEDICT/.test(line) || CEDICT_LINE.test(line)) return "cedict";
    if (/^\S*\s*\S* \/EDICT/.test(line) || (EDICT_LINE.test(line) && /[^\p{ASCII}]/u.test(line))) edictLines++;
    if (number >= 20) break;
  }
  return edictLines >= 3 ? "edict" : undefined;
}

/** Reads one corpus file in any supported format, calling `onEntry` for each entry as it streams. */
export async function readCorpus(spec: CorpusSpec, onEntry: (entry: Entry) => void): Promise<ImportReport> {
  const id = corpusId(spec);
  const format = spec.format ?? (await detectFormat(spec.path));
  const languages = { sourceLang: spec.sourceLang, targetLang: spec.targetLang };
  switch (format) {
    case "cedict":
      return importCedict(spec.path, id, onEntry);
    case "edict":
      return importEdict(spec.path, id, {}, onEntry);
    case "dictd":
      return importDictd(spec.path, id, languages, onEntry);
    case "jsonl":
      return importJsonl(spec.path, onEntry);
    case "wiktextract":
      return importWiktextract(spec.path, id, { glossLang: spec.targetLang }, onEntry);
    case "tbx":
      return importTbx(spec.path, id, languages, onEntry);
    case "tmx":
      return importTmx(spec.path, id, languages, onEntry);
    case "idiomkb":
      return importIdiomKb(spec.path, id, languages, onEntry);
    case "documents":
      return importDocuments(spec.path, id, { lang: spec.sourceLang }, onEntry);
    case "tsv":
    case "csv":
      return importDelimited(
        spec.path,
        id,
        { sourceLang: spec.sourceLang ?? "und", targetLang: spec.targetLang ?? "und" },
        onEntry,
      );
  }
}

/** Loads corpora into one lexical index; returns the index and one report per corpus. */
export async function loadIndex(specs: CorpusSpec[]): Promise<{ index: LexicalIndex; reports: ImportReport[] }> {
  const index = new LexicalIndex();
  const reports: ImportReport[] = [];
  for (const spec of specs) {
    const id = corpusId(spec);
    reports.push(await readCorpus(spec, (entry) => index.add(entry, id)));
  }
  return { index, reports };
}

/** Writes a corpus as Glossa entry JSONL (one entry per line), atomically: write a temp file, then rename. */
export async function writeEntriesJsonl(spec: CorpusSpec, out: string): Promise<ImportReport> {
  await mkdir(dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  const stream = createWriteStream(tmp, { encoding: "utf8" });
  const failed = new Promise<never>((_, reject) => stream.once("error", reject));
  const report = await Promise.race([
    readCorpus(spec, (entry) => {
      stream.write(`${JSON.stringify(entry)}\n`);
    }),
    failed,
  ]);
  await Promise.race([new Promise<void>((resolve) => stream.end(resolve)), failed]);
  const handle = await open(tmp, "r+");
  await handle.sync();
  await handle.close();
  await rename(tmp, out);
  return report;
}

async function importJsonl(file: string, onEntry: (entry: Entry) => void): Promise<ImportReport> {
  const report = newReport(file);
  for await (const record of readJsonRecords(file)) {
    if (!record.ok) {
      recordMalformed(report, record.line, record.reason);
      continue;
    }
    const e = record.value as Partial<Entry> | null;
    if (
      typeof e !== "object" ||
      e === null ||
      typeof e.id !== "string" ||
      typeof e.headword !== "string" ||
      typeof e.gloss !== "string" ||
      typeof e.lang !== "string"
    ) {
      recordMalformed(report, record.line, "an entry needs string id, headword, gloss and lang");
      continue;
    }
    onEntry(e as Entry);
    report.imported++;
  }
  return report;
}
