import type { Entry } from "../types";
import { StableIds } from "./ids";
import { primaryLanguage, sameLanguage } from "./languages";
import { type ImportReport, newReport, recordMalformed } from "./report";
import { childrenNamed, langOf, readXmlRecords, textOf, type XmlElement } from "./xml";

export interface TmxOptions {
  /** Source language; the header's `srclang` when omitted (or each unit's first variant when that is `*all*`). */
  sourceLang?: string;
  /** Target language; every other variant when omitted. */
  targetLang?: string;
}

const UNITS = new Set(["tu"]);
const VARIANTS = new Set(["tuv"]);
const SEGMENTS = new Set(["seg"]);
/** Inline codes hold the original document's markup (`<b>`, `{1}`), not text; `hi` and `sub` hold text. */
const INLINE_CODES = new Set(["bpt", "ept", "ph", "it", "ut"]);

/**
 * TMX translation memories: each translation unit becomes one entry, its source-language segment
 * the headword and the target-language segment(s) the gloss. `tuid` is the natural key.
 */
export async function importTmx(
  file: string,
  corpus: string,
  options: TmxOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  let headerSource: string | undefined;
  await readXmlRecords(file, UNITS, {
    onOutside(name, attributes) {
      if (name === "header" && attributes.srclang && attributes.srclang !== "*all*") headerSource = attributes.srclang;
    },
    onProblem(problem) {
      recordMalformed(report, problem.line, problem.message);
    },
    onRecord(unit, problems) {
      if (problems.length > 0) {
        recordMalformed(report, problems[0]!.line, `unit from line ${unit.line} skipped: ${problems[0]!.message}`);
        return;
      }
      const segments = childrenNamed(unit, VARIANTS).flatMap((tuv) => {
        const lang = langOf(tuv);
        const text = segmentText(tuv);
        return lang && text ? [{ lang, text }] : [];
      });
      if (segments.length === 0) {
        recordMalformed(report, unit.line, "unit has no <tuv> with a language and a non-empty <seg>");
        return;
      }
      const sourceLang = options.sourceLang ?? headerSource ?? segments[0]!.lang;
      const source = segments.find((s) => sameLanguage(s.lang, sourceLang));
      const targets = segments.filter(
        (s) =>
          s !== source &&
          !sameLanguage(s.lang, sourceLang) &&
          (!options.targetLang || sameLanguage(s.lang, options.targetLang)),
      );
      if (!source || targets.length === 0) {
        report.skipped++;
        return;
      }
      const gloss =
        targets.length === 1
          ? targets[0]!.text
          : targets.map((t) => `${primaryLanguage(t.lang)}: ${t.text}`).join("; ");
      const lang = primaryLanguage(source.lang);
      const tuid = unit.attributes.tuid?.trim();
      onEntry({
        id: tuid ? ids.forKey(tuid) : ids.forContent([lang, source.text, gloss]),
        headword: source.text,
        gloss,
        lang,
        ...(targets.length === 1 ? { glossLang: primaryLanguage(targets[0]!.lang) } : {}),
      });
      report.imported++;
    },
  });
  return report;
}

function segmentText(tuv: XmlElement): string {
  const seg = childrenNamed(tuv, SEGMENTS)[0];
  return seg ? textOf(seg, INLINE_CODES).replace(/\s+/g, " ").trim() : "";
}
