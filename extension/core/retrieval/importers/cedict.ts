import type { Entry } from "../types";
import { StableIds } from "./ids";
import { readLines } from "./lines";
import { type ImportReport, newReport, recordMalformed } from "./report";

const LINE = /^(\S+) (\S+) \[([^\]]*)\] \/(.+)\/\s*$/;

/** Labels in CC-CEDICT glosses that a translator may want to search or filter on. */
const TAGS: Array<[RegExp, string]> = [
  [/\(idiom\)/i, "idiom"],
  [/\(neologism/i, "neologism"],
  [/\(Internet slang\)/i, "internet-slang"],
  [/\(slang\)/i, "slang"],
  [/\(coll\.\)/i, "colloquial"],
  [/\(loanword/i, "loanword"],
];

/**
 * CC-CEDICT: `Traditional Simplified [pin1 yin1] /gloss 1/gloss 2/`. The simplified form is the
 * headword; the traditional form and the pinyin are variants, so either script finds the entry.
 */
export async function importCedict(
  file: string,
  corpus: string,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  for await (const { line, number } of readLines(file)) {
    if (!line.trim() || line.startsWith("#")) {
      report.skipped++;
      continue;
    }
    const m = LINE.exec(line);
    if (!m) {
      recordMalformed(report, number, "not `Traditional Simplified [pinyin] /gloss/`");
      continue;
    }
    const [, traditional, simplified, pinyin, glossList] = m as unknown as [string, string, string, string, string];
    const glosses = glossList.split("/").filter((g) => g.trim());
    if (glosses.length === 0) {
      recordMalformed(report, number, "no gloss");
      continue;
    }
    const tags = TAGS.filter(([re]) => re.test(glossList)).map(([, tag]) => tag);
    const variants = [traditional, pinyin].filter((v) => v && v !== simplified);
    onEntry({
      id: ids.forContent([simplified, traditional, pinyin, glossList]),
      headword: simplified,
      variants,
      gloss: glosses.join("; "),
      lang: "zh",
      glossLang: "en",
      ...(tags.length ? { tags } : {}),
    });
    report.imported++;
  }
  return report;
}
