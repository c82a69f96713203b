import { createReadStream } from "node:fs";
import { access } from "node:fs/promises";
import { basename } from "node:path";
import { createGunzip } from "node:zlib";
import type { Entry } from "../types";
import { StableIds } from "./ids";
import { primaryLanguage } from "./languages";
import { readLines } from "./lines";
import { type ImportReport, newReport, recordMalformed } from "./report";

export interface DictdOptions {
  /** Languages of headwords and articles; read from a FreeDict-style name (`freedict-eng-jpn`) when omitted. */
  sourceLang?: string;
  targetLang?: string;
}

interface IndexEntry {
  headword: string;
  offset: number;
  length: number;
  line: number;
}

/**
 * A dictd dictionary: `name.index` (`headword<TAB>b64offset<TAB>b64length`, small) and
 * `name.dict.dz` (dictzip, which is gzip and so can be read front to back). The index is sorted by
 * offset and the articles are cut out of the decompressed stream as it passes, so the dictionary
 * is never held in memory. Either file's path may be given. The `00database…` entries are metadata
 * and are skipped.
 */
export async function importDictd(
  path: string,
  corpus: string,
  options: DictdOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const { index, dict } = await dictdPair(path);
  const report = newReport(index);
  const langs = languagesFromName(index);
  const lang = options.sourceLang ?? langs?.[0] ?? "und";
  const glossLang = options.targetLang ?? langs?.[1];
  const articles: IndexEntry[] = [];
  for await (const { line, number } of readLines(index)) {
    const [headword, offset, length] = line.split("\t");
    if (!line.trim()) {
      report.skipped++;
      continue;
    }
    const at = offset === undefined ? Number.NaN : decodeNumber(offset);
    const size = length === undefined ? Number.NaN : decodeNumber(length);
    if (!headword || !Number.isFinite(at) || !Number.isFinite(size)) {
      recordMalformed(report, number, "not `headword<TAB>offset<TAB>length` in dictd base64");
      continue;
    }
    if (headword.startsWith("00database") || headword.startsWith("00-database")) {
      report.skipped++;
      continue;
    }
    articles.push({ headword, offset: at, length: size, line: number });
  }
  articles.sort((a, b) => a.offset - b.offset || a.line - b.line);

  const ids = new StableIds(corpus);
  const raw = createReadStream(dict);
  const input = dict.endsWith(".dz") || dict.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  let buffer: Buffer = Buffer.alloc(0);
  let bufferStart = 0;
  let next = 0;
  const emit = (article: IndexEntry) => {
    const bytes = buffer.subarray(article.offset - bufferStart, article.offset - bufferStart + article.length);
    const parsed = parseArticle(article.headword, bytes.toString("utf8"));
    if (!parsed.gloss) {
      recordMalformed(report, article.line, "empty article");
      return;
    }
    onEntry({
      id: ids.forContent([article.headword, parsed.pos, parsed.gloss]),
      headword: article.headword,
      gloss: parsed.gloss,
      lang,
      ...(glossLang ? { glossLang } : {}),
      ...(parsed.pos ? { pos: parsed.pos } : {}),
    });
    report.imported++;
  };
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      const bufferEnd = bufferStart + buffer.length;
      while (next < articles.length && articles[next]!.offset + articles[next]!.length <= bufferEnd) {
        emit(articles[next]!);
        next++;
      }
      // Keep only what the remaining articles can still need.
      const keepFrom = next < articles.length ? Math.min(articles[next]!.offset, bufferEnd) : bufferEnd;
      if (keepFrom > bufferStart) {
        buffer = Buffer.from(buffer.subarray(keepFrom - bufferStart));
        bufferStart = keepFrom;
      }
    }
  } catch (error) {
    recordMalformed(report, articles[next]?.line ?? 0, `dictionary data unreadable: ${(error as Error).message}`);
  } finally {
    raw.destroy();
  }
  for (; next < articles.length; next++) {
    recordMalformed(report, articles[next]!.line, "article lies beyond the end of the dictionary data");
  }
  return report;
}

/** The `.index` and `.dict(.dz)` files of one dictionary, from the path of either. */
export async function dictdPair(path: string): Promise<{ index: string; dict: string }> {
  const stem = path.replace(/\.(index|dict\.dz|dict)$/i, "");
  const index = `${stem}.index`;
  await access(index);
  for (const dict of [`${stem}.dict.dz`, `${stem}.dict`]) {
    try {
      await access(dict);
      return { index, dict };
    } catch {
      // try the uncompressed name next
    }
  }
  throw new Error(`${index} has no ${stem}.dict.dz or ${stem}.dict beside it`);
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** dictd's numbers: base64 digits, most significant first (not RFC 4648 byte encoding). */
function decodeNumber(text: string): number {
  let n = 0;
  for (const char of text) {
    const digit = B64.indexOf(char);
    if (digit < 0) return Number.NaN;
    n = n * 64 + digit;
  }
  return text ? n : Number.NaN;
}

/** `freedict-eng-jpn` → [en, ja]. */
function languagesFromName(index: string): [string, string] | undefined {
  const m = /(?:^|[-_.])([a-z]{3})-([a-z]{3})(?:[-_.]|$)/i.exec(basename(index).replace(/\.index$/i, ""));
  return m ? [primaryLanguage(m[1]!), primaryLanguage(m[2]!)] : undefined;
}

/**
 * An article repeats its headword on the first line, with pronunciation and a `<pos>` label;
 * the rest is the translation and definition text.
 */
function parseArticle(headword: string, text: string): { gloss: string; pos?: string } {
  const lines = text.split("\n");
  let pos: string | undefined;
  if (lines[0]?.trim().toLowerCase().startsWith(headword.toLowerCase())) {
    pos = /<([^>]+)>\s*$/.exec(lines[0])?.[1];
    lines.shift();
  }
  const gloss = lines
    .map((l) => l.replace(/\s+/g, " ").trim())
    .filter(Boolean)
    .join("; ");
  return pos ? { gloss, pos } : { gloss };
}
