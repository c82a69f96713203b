import type { Entry } from "../types";
import { StableIds } from "./ids";
import { readLines } from "./lines";
import { type ImportReport, newReport, recordMalformed } from "./report";

export interface DelimitedOptions {
  /** Language of the source-term column when the file has no header naming it. */
  sourceLang: string;
  targetLang: string;
}

const SOURCE_NAMES = ["source", "term", "headword", "src", "word"];
const TARGET_NAMES = ["target", "translation", "gloss", "tgt", "definition", "meaning"];
const NOTE_NAMES = ["note", "notes", "comment", "context", "domain"];

/**
 * A TSV or CSV glossary: `source<TAB>target[<TAB>note]`, optionally with a header row naming the
 * columns (source/term, target/translation/gloss, note). A header like `en\tde` names the languages.
 * CSV follows RFC 4180 quoting (quoted fields may hold commas, doubled quotes and newlines).
 */
export async function importDelimited(
  file: string,
  corpus: string,
  options: DelimitedOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  const csv = /\.csv$/i.test(file);
  let columns: { source: number; target: number; note: number } | null = null;
  let { sourceLang, targetLang } = options;
  for await (const { fields, number } of readRecords(file, csv, report)) {
    if (fields.every((f) => !f.trim()) || fields[0]?.startsWith("#")) {
      report.skipped++;
      continue;
    }
    if (columns === null) {
      const lower = fields.map((f) => f.trim().toLowerCase());
      const source = lower.findIndex((f) => SOURCE_NAMES.includes(f));
      const target = lower.findIndex((f) => TARGET_NAMES.includes(f));
      const langHeader = lower.length >= 2 && lower.slice(0, 2).every((f) => /^[a-z]{2,3}(-[a-z0-9]+)?$/i.test(f));
      if (source >= 0 && target >= 0) {
        columns = { source, target, note: lower.findIndex((f) => NOTE_NAMES.includes(f)) };
        report.skipped++;
        continue;
      }
      columns = { source: 0, target: 1, note: 2 };
      if (langHeader && !SOURCE_NAMES.includes(lower[0]!)) {
        sourceLang = fields[0]!.trim();
        targetLang = fields[1]!.trim();
        report.skipped++;
        continue;
      }
    }
    const headword = fields[columns.source]?.trim() ?? "";
    const target = fields[columns.target]?.trim() ?? "";
    if (!headword || !target) {
      recordMalformed(report, number, `expected a source and a target column, got ${fields.length} field(s)`);
      continue;
    }
    const note = columns.note >= 0 ? fields[columns.note]?.trim() : undefined;
    onEntry({
      id: ids.forContent([headword, target, note]),
      headword,
      gloss: note ? `${target} (${note})` : target,
      lang: sourceLang,
      glossLang: targetLang,
    });
    report.imported++;
  }
  return report;
}

async function* readRecords(
  file: string,
  csv: boolean,
  report: ImportReport,
): AsyncGenerator<{ fields: string[]; number: number }> {
  if (!csv) {
    for await (const { line, number } of readLines(file)) yield { fields: line.split("\t"), number };
    return;
  }
  let fields: string[] = [];
  let field = "";
  let quoted = false;
  let start = 0;
  for await (const { line, number } of readLines(file)) {
    if (!quoted) start = number;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quoted) {
        if (c === '"' && line[i + 1] === '"') {
          field += '"';
          i++;
        } else if (c === '"') quoted = false;
        else field += c;
      } else if (c === '"' && field === "") quoted = true;
      else if (c === ",") {
        fields.push(field);
        field = "";
      } else field += c;
    }
    if (quoted) {
      field += "\n";
      continue;
    }
    fields.push(field);
    yield { fields, number: start };
    fields = [];
    field = "";
  }
  if (quoted) recordMalformed(report, start, "unterminated quoted field at end of file");
}
