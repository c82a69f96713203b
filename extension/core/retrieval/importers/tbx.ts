import type { Entry } from "../types";
import { StableIds } from "./ids";
import { primaryLanguage } from "./languages";
import { type ImportReport, newReport, recordMalformed } from "./report";
import { langOf, readXmlRecords, textOf, type XmlElement } from "./xml";

export interface TbxOptions {
  /** Language whose terms become headwords; the root's xml:lang when omitted, or every language when neither is set. */
  sourceLang?: string;
  /** Language whose terms become the gloss; all other languages when omitted. */
  targetLang?: string;
}

const CONCEPTS = new Set(["termEntry", "conceptEntry"]);
const LANGUAGE_SECTIONS = new Set(["langSet", "langSec"]);
const TERM_SECTIONS = new Set(["tig", "ntig", "termSec"]);

interface Term {
  text: string;
  pos?: string;
}

/**
 * TBX termbases, TBX-Basic / TBX v2 (`martif`, `termEntry`, `langSet`, `tig`/`ntig`) and TBX v3
 * (`tbx`, `conceptEntry`, `langSec`, `termSec`; DCA `descrip type="definition"` or DCT
 * `basic:definition`). One entry per concept and source-language term; the target-language terms
 * are its gloss, with the definition and notes after them. The concept id is the natural key.
 */
export async function importTbx(
  file: string,
  corpus: string,
  options: TbxOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  let documentLang: string | undefined;
  await readXmlRecords(file, CONCEPTS, {
    onOutside(name, attributes) {
      if ((name === "martif" || name === "tbx") && attributes["xml:lang"]) documentLang = attributes["xml:lang"];
    },
    onProblem(problem) {
      recordMalformed(report, problem.line, problem.message);
    },
    onRecord(concept, problems) {
      if (problems.length > 0) {
        recordMalformed(
          report,
          problems[0]!.line,
          `concept from line ${concept.line} skipped: ${problems[0]!.message}`,
        );
        return;
      }
      const terms = new Map<string, Term[]>();
      for (const section of descendants(concept, LANGUAGE_SECTIONS)) {
        const lang = langOf(section);
        if (!lang) continue;
        const key = primaryLanguage(lang);
        const list = terms.get(key) ?? [];
        list.push(...readTerms(section));
        terms.set(key, list);
      }
      if (![...terms.values()].some((list) => list.length > 0)) {
        recordMalformed(report, concept.line, "concept has no term in any language section");
        return;
      }
      const sourceLang = options.sourceLang ?? documentLang;
      const sources = sourceLang ? [primaryLanguage(sourceLang)] : [...terms.keys()];
      const explanation = definitions(concept);
      let emitted = 0;
      for (const source of sources) {
        const targets = [...terms].filter(
          ([lang, list]) =>
            lang !== source && list.length > 0 && (!options.targetLang || lang === primaryLanguage(options.targetLang)),
        );
        const equivalents =
          targets.length === 1
            ? targets[0]![1].map((t) => t.text).join("; ")
            : targets.map(([lang, list]) => `${lang}: ${list.map((t) => t.text).join(", ")}`).join("; ");
        const gloss = [equivalents, explanation].filter(Boolean).join(" — ");
        if (!gloss) continue;
        const glossLang = targets.length === 1 ? targets[0]![0] : undefined;
        (terms.get(source) ?? []).forEach((term, n) => {
          const naturalKey = concept.attributes.id ? `${concept.attributes.id}:${source}${n ? `:${n + 1}` : ""}` : "";
          onEntry({
            id: naturalKey ? ids.forKey(naturalKey) : ids.forContent([source, term.text, term.pos, gloss]),
            headword: term.text,
            gloss,
            lang: source,
            ...(glossLang ? { glossLang } : {}),
            ...(term.pos ? { pos: term.pos } : {}),
          });
          emitted++;
          report.imported++;
        });
      }
      if (emitted === 0) report.skipped++;
    },
  });
  return report;
}

function readTerms(section: XmlElement): Term[] {
  const containers = descendants(section, TERM_SECTIONS);
  const out: Term[] = [];
  for (const container of containers.length ? containers : [section]) {
    const term = descendants(container, TERM).map((t) => clean(textOf(t)))[0];
    if (!term) continue;
    const pos = descendants(container, NOTES).find(
      (n) => n.name === "partOfSpeech" || n.attributes.type === "partOfSpeech",
    );
    const posText = pos ? clean(textOf(pos)) : "";
    out.push(posText ? { text: term, pos: posText } : { text: term });
  }
  return out;
}

const TERM = new Set(["term"]);
const NOTES = new Set(["termNote", "partOfSpeech"]);
const EXPLANATIONS = new Set(["descrip", "definition", "note"]);

/** Definitions (DCA `descrip type="definition"`, DCT `definition`) and notes anywhere in the concept. */
function definitions(concept: XmlElement): string {
  const texts = descendants(concept, EXPLANATIONS)
    .filter((e) => e.name !== "descrip" || e.attributes.type === "definition")
    .map((e) => clean(textOf(e)))
    .filter(Boolean);
  return [...new Set(texts)].join(" ");
}

function descendants(element: XmlElement, names: ReadonlySet<string>): XmlElement[] {
  const out: XmlElement[] = [];
  for (const child of element.children) {
    if (typeof child === "string") continue;
    if (names.has(child.name)) out.push(child);
    else out.push(...descendants(child, names));
  }
  return out;
}

function clean(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
