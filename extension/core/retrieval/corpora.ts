import { createWriteStream } from "node:fs";
import { mkdir, open, rename } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { importCedict } from "./importers/cedict";
import { importDelimited } from "./importers/delimited";
import { readLines } from "./importers/lines";
import { type ImportReport, newReport, recordMalformed } from "./importers/report";
import { LexicalIndex } from "./lexical";
import type { Entry } from "./types";

export type CorpusFormat = "cedict" | "tsv" | "csv" | "jsonl";

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
      .replace(/\.(gz)$/i, "")
      .replace(/\.[^.]+$/, "")
  );
}

export async function detectFormat(path: string): Promise<CorpusFormat> {
  const name = path.toLowerCase().replace(/\.gz$/, "");
  if (name.endsWith(".tsv")) return "tsv";
  if (name.endsWith(".csv")) return "csv";
  if (name.endsWith(".jsonl")) return "jsonl";
  for await (const { line, number } of readLines(path)) {
    if (/CC-CEDICT|^\S+ \S+ \[[^\]]*\] \//.test(line)) return "cedict";
    if (number >= 20) break;
  }
  if (name.endsWith(".u8")) return "cedict";
  throw new Error(
    `Cannot tell the format of ${path}: use a .tsv, .csv, .jsonl or CC-CEDICT (.u8) file, or name the format.`,
  );
}

/** Reads one corpus file in any supported format, calling `onEntry` for each entry as it streams. */
export async function readCorpus(spec: CorpusSpec, onEntry: (entry: Entry) => void): Promise<ImportReport> {
  const id = corpusId(spec);
  const format = spec.format ?? (await detectFormat(spec.path));
  switch (format) {
    case "cedict":
      return importCedict(spec.path, id, onEntry);
    case "jsonl":
      return importJsonl(spec.path, onEntry);
    default:
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
  for await (const { line, number } of readLines(file)) {
    if (!line.trim()) {
      report.skipped++;
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      recordMalformed(report, number, "not valid JSON");
      continue;
    }
    const e = value as Partial<Entry>;
    if (
      typeof e.id !== "string" ||
      typeof e.headword !== "string" ||
      typeof e.gloss !== "string" ||
      typeof e.lang !== "string"
    ) {
      recordMalformed(report, number, "an entry needs string id, headword, gloss and lang");
      continue;
    }
    onEntry(e as Entry);
    report.imported++;
  }
  return report;
}
