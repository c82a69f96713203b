import type { Entry } from "../types";
import { readByteLines } from "./byteLines";
import { StableIds } from "./ids";
import { type ImportReport, newReport, recordMalformed } from "./report";

export interface EdictOptions {
  /** `euc-jp` for the classic files (Debian's /usr/share/edict/edict); decided from the first non-ASCII line when omitted. */
  encoding?: "euc-jp" | "utf-8";
}

const LINE = /^(\S+)(?: \[([^\]]*)\])? \/(.*)\/\s*$/;

/** EDICT's part-of-speech codes, which open each sense: `(n)`, `(exp,v5r)`, `(adj-na,n)`. */
const POS_GROUP =
  /^\(((?:n|n-\w+|v\w*|adj(?:-\w+)?|adv(?:-to)?|exp|int|pref|suf|prt|conj|ctr|num|pn|aux(?:-\w+)?|unc|cop(?:-\w+)?)(?:,[\w-]+)*)\)\s*/;

/** EDICT labels a translator may search or filter on. */
const TAGS: Record<string, string> = {
  id: "idiom",
  "net-sl": "internet-slang",
  sl: "slang",
  col: "colloquial",
  vulg: "vulgar",
  X: "vulgar",
  derog: "derogatory",
  joc: "humorous",
  arch: "archaic",
  obs: "obsolete",
  rare: "rare",
  poet: "poetic",
  proverb: "proverb",
  yoji: "yojijukugo",
  abbr: "abbreviation",
  hon: "honorific",
  hum: "humble",
  pol: "polite",
  fam: "familiar",
  male: "male-speech",
  fem: "female-speech",
};

/**
 * EDICT / EDICT2: `KANJI1;KANJI2 [KANA1;KANA2] /(pos) gloss/gloss/…/EntL1234/`, or a kana-only
 * `KANA /(pos) gloss/`. The first written form is the headword; the other forms and the kana
 * readings are variants, so a kana query finds the kanji entry. EDICT2's EntL sequence number is
 * the natural key; the classic EDICT has none and gets content-hash ids.
 */
export async function importEdict(
  file: string,
  corpus: string,
  options: EdictOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(file);
  const ids = new StableIds(corpus);
  let decoder = options.encoding ? new TextDecoder(options.encoding, { fatal: true }) : undefined;
  for await (const { bytes, number } of readByteLines(file)) {
    decoder ??= nonAscii(bytes) ? new TextDecoder(isUtf8(bytes) ? "utf-8" : "euc-jp", { fatal: true }) : undefined;
    let line: string;
    try {
      line = decoder ? decoder.decode(bytes) : bytes.toString("latin1");
    } catch {
      recordMalformed(report, number, `not valid ${decoder?.encoding ?? "text"}`);
      continue;
    }
    if (!line.trim() || (number === 1 && /EDICT|Electronic Dictionary Research/.test(line))) {
      report.skipped++;
      continue;
    }
    const m = LINE.exec(line);
    if (!m) {
      recordMalformed(report, number, "not `KANJI [KANA] /gloss/…/`");
      continue;
    }
    const [, written, readings, body] = m as unknown as [string, string, string | undefined, string];
    const forms = splitForms(written);
    const kana = readings === undefined ? [] : splitForms(readings);
    let entSeq: string | undefined;
    const items: string[] = [];
    for (const item of body.split("/")) {
      const text = item.trim();
      if (/^EntL\d+X?$/.test(text)) entSeq = text.replace(/X$/, "");
      else if (text && text !== "(P)") items.push(text);
    }
    if (items.length === 0 || forms.length === 0) {
      recordMalformed(report, number, "no gloss");
      continue;
    }
    const pos = POS_GROUP.exec(items[0]!)?.[1];
    const gloss = items.map(senseText).join("; ");
    const tags = new Set<string>();
    for (const group of body.matchAll(/\(([^()]*)\)/g)) {
      for (const label of group[1]!.split(",")) {
        const tag = TAGS[label.trim()];
        if (tag) tags.add(tag);
      }
    }
    const headword = forms[0]!;
    const variants = [...new Set([...forms.slice(1), ...kana])].filter((v) => v !== headword);
    onEntry({
      id: entSeq ? ids.forKey(entSeq) : ids.forContent([headword, variants.join(";"), body]),
      headword,
      ...(variants.length ? { variants } : {}),
      gloss,
      lang: "ja",
      glossLang: "en",
      ...(pos ? { pos } : {}),
      ...(tags.size ? { tags: [...tags] } : {}),
    });
    report.imported++;
  }
  return report;
}

/** `日本(P);日本国(iK)` → written forms without EDICT's markers and reading restrictions. */
function splitForms(field: string): string[] {
  return field
    .split(";")
    .map((f) => f.replace(/\([^)]*\)/g, "").trim())
    .filter(Boolean);
}

/** `(n) (1) tie up` → `1. tie up`: the POS codes go to `pos`, the sense number stays as a marker. */
function senseText(item: string): string {
  let text = item;
  for (let m = POS_GROUP.exec(text); m; m = POS_GROUP.exec(text)) text = text.slice(m[0].length);
  return text.replace(/^\((\d+)\)\s*/, "$1. ");
}

function nonAscii(bytes: Buffer): boolean {
  for (const b of bytes) if (b > 0x7f) return true;
  return false;
}

const utf8Probe = new TextDecoder("utf-8", { fatal: true });

function isUtf8(bytes: Buffer): boolean {
  try {
    utf8Probe.decode(bytes);
    return true;
  } catch {
    return false;
  }
}
