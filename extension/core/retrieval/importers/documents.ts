import { readdir, stat } from "node:fs/promises";
import { extname, join, relative } from "node:path";
import type { Entry } from "../types";
import { StableIds } from "./ids";
import { languageFromScript, primaryLanguage } from "./languages";
import { readLines } from "./lines";
import { type ImportReport, newReport, recordMalformed } from "./report";

export interface DocumentOptions {
  /** Language of the documents; guessed per chunk from its script (else "und") when omitted. */
  lang?: string;
  /** Longest chunk in characters; longer paragraphs are split at sentence ends (default 1,200). */
  maxChars?: number;
  /** Paragraphs shorter than this are merged with the next ones in their section (default 200). */
  minChars?: number;
}

const DOCUMENT_EXTENSIONS = new Set([".txt", ".md", ".markdown"]);

/**
 * Plain-text and Markdown documents for knowledge corpora, chunked by paragraph: blank lines end a
 * paragraph, a Markdown heading starts a new chunk and becomes its title, tiny paragraphs are merged
 * and long ones split at sentence ends (。！？ included). A folder is walked for .txt and .md files,
 * in name order so ids and order are the same on every import.
 */
export async function importDocuments(
  path: string,
  corpus: string,
  options: DocumentOptions,
  onEntry: (entry: Entry) => void,
): Promise<ImportReport> {
  const report = newReport(path);
  const ids = new StableIds(corpus);
  const info = await stat(path);
  const files = info.isDirectory() ? await walk(path) : [path];
  for (const file of files) {
    const name = info.isDirectory() ? relative(path, file) : "";
    try {
      for await (const chunk of chunkDocument(file, options)) {
        const lang = options.lang ? primaryLanguage(options.lang) : (languageFromScript(chunk.text) ?? "und");
        onEntry({
          id: ids.forContent([name, chunk.title, chunk.text]),
          headword: chunk.headword,
          gloss: chunk.text,
          lang,
        });
        report.imported++;
      }
    } catch (error) {
      // One unreadable file in a folder loses only itself.
      const single = newReport(file);
      recordMalformed(single, 0, `unreadable: ${(error as Error).message}`);
      report.malformed++;
      if (report.firstErrors.length < 20) report.firstErrors.push(...single.firstErrors);
    }
  }
  return report;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full)));
    else if (entry.isFile() && DOCUMENT_EXTENSIONS.has(extname(entry.name).toLowerCase())) out.push(full);
  }
  return out;
}

export interface Chunk {
  /** The nearest heading, when the document has one. */
  title?: string;
  /** Title and chunk number within its section, or the chunk's first words. */
  headword: string;
  text: string;
}

/** Streams one document's chunks. */
export async function* chunkDocument(file: string, options: DocumentOptions = {}): AsyncGenerator<Chunk> {
  const maxChars = options.maxChars ?? 1200;
  const minChars = Math.min(options.minChars ?? 200, maxChars);
  const markdown = /\.(md|markdown)$/i.test(file);
  let title: string | undefined;
  let sectionCount = 0;
  let paragraph: string[] = [];
  let pending = "";
  let inFence = false;

  const chunk = (text: string): Chunk => {
    sectionCount++;
    const headword = title ? `${title} (${sectionCount})` : firstWords(text);
    return title ? { title, headword, text } : { headword, text };
  };
  /** Adds a finished paragraph; returns the chunks it completes. */
  const addParagraph = (): Chunk[] => {
    let text = joinLines(paragraph);
    paragraph = [];
    if (!text) return [];
    const out: Chunk[] = [];
    if (text.length > maxChars && pending) {
      // Tiny paragraphs before a long one open its first piece rather than stand alone.
      text = `${pending}\n${text}`;
      pending = "";
    }
    for (const piece of text.length > maxChars ? splitSentences(text, maxChars) : [text]) {
      if (pending && pending.length + 1 + piece.length > maxChars) {
        out.push(chunk(pending));
        pending = "";
      }
      pending = pending ? `${pending}\n${piece}` : piece;
      if (pending.length >= minChars) {
        out.push(chunk(pending));
        pending = "";
      }
    }
    return out;
  };
  const flushSection = (): Chunk[] => {
    const out = addParagraph();
    if (pending) out.push(chunk(pending));
    pending = "";
    return out;
  };

  for await (const { line } of readLines(file)) {
    if (markdown && /^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const heading = markdown && !inFence ? /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line) : null;
    if (heading) {
      yield* flushSection();
      title = heading[1]!.trim();
      sectionCount = 0;
    } else if (!line.trim() && !inFence) {
      yield* addParagraph();
    } else {
      paragraph.push(line.trim());
    }
  }
  yield* flushSection();
}

/** Lines of one paragraph as running text; CJK lines join without a space, as the script writes no spaces. */
function joinLines(lines: string[]): string {
  let text = "";
  for (const line of lines) {
    const cjkSeam = text && CJK_CHAR.test(text.at(-1)!) && CJK_CHAR.test(line[0] ?? "");
    text = text && !cjkSeam ? `${text} ${line}` : text + line;
  }
  return text.replace(/[ \t]+/g, " ").trim();
}

const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}。，、！？；：「」『』（）]/u;

/** The first words of a chunk, as a headword for chunks without a heading. */
function firstWords(text: string): string {
  const cjk = languageFromScript(text.slice(0, 40));
  if (cjk === "zh" || cjk === "ja") return [...text].slice(0, 16).join("") + (text.length > 16 ? "…" : "");
  const words = text.split(/\s+/);
  return words.slice(0, 8).join(" ") + (words.length > 8 ? "…" : "");
}

const CLOSERS = new Set(['"', "'", "”", "’", ")", "]", "」", "』", "）", "】"]);
const CJK_ENDS = new Set(["。", "！", "？"]);
const LATIN_ENDS = new Set([".", "!", "?"]);

/** Sentences, packed greedily into pieces of at most `maxChars`; a sentence longer than that is cut at a space. */
export function splitSentences(text: string, maxChars: number): string[] {
  const sentences: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (!CJK_ENDS.has(c) && !LATIN_ENDS.has(c)) continue;
    let end = i + 1;
    while (end < text.length && (CJK_ENDS.has(text[end]!) || LATIN_ENDS.has(text[end]!) || CLOSERS.has(text[end]!)))
      end++;
    // A Latin full stop ends a sentence only before a space (not in "3.5" or "e.g.x").
    if (!CJK_ENDS.has(c) && end < text.length && !/\s/.test(text[end]!)) continue;
    sentences.push(text.slice(start, end).trim());
    start = end;
    i = end - 1;
  }
  if (start < text.length && text.slice(start).trim()) sentences.push(text.slice(start).trim());
  const pieces: string[] = [];
  let piece = "";
  for (const sentence of sentences.flatMap((s) => hardSplit(s, maxChars))) {
    const joiner = piece && !CJK_ENDS.has(piece.at(-1)!) ? " " : "";
    if (piece && piece.length + joiner.length + sentence.length > maxChars) {
      pieces.push(piece);
      piece = sentence;
    } else piece = piece + joiner + sentence;
  }
  if (piece) pieces.push(piece);
  return pieces;
}

function hardSplit(sentence: string, maxChars: number): string[] {
  const out: string[] = [];
  let rest = sentence;
  while (rest.length > maxChars) {
    const space = rest.lastIndexOf(" ", maxChars);
    const cut = space > maxChars / 2 ? space : maxChars;
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}
