import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";

/**
 * A small streaming XML reader, enough for TBX and TMX: elements, attributes, text, CDATA, comments,
 * processing instructions, a DOCTYPE (skipped), the five predefined entities and numeric character
 * references. It is fed chunks and reports events as it goes, so a file of any size reads in constant
 * memory (plus the largest single record the caller keeps). Well-formedness errors are reported
 * with their line and reading goes on: a stray close tag is ignored, a close tag that skips open
 * elements closes them, a bad entity is kept as text.
 */
export interface XmlHandler {
  open(name: string, attributes: Record<string, string>, line: number): void;
  close(name: string, line: number): void;
  text(text: string): void;
  error(message: string, line: number): void;
}

const NAME_START = /[A-Za-z_:\u00C0-\uFFFF]/;
const ATTRIBUTE = /([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

export class XmlTokenizer {
  private buffer = "";
  private line = 1;
  private readonly stack: Array<{ name: string; line: number }> = [];

  constructor(private readonly handler: XmlHandler) {}

  write(chunk: string): void {
    this.buffer += chunk;
    this.drain(false);
  }

  /** Flushes what is left; reports elements still open (a truncated file). */
  end(): void {
    this.drain(true);
    if (this.buffer.length > 0) {
      this.handler.error(`file ends inside markup: ${JSON.stringify(this.buffer.slice(0, 40))}`, this.line);
      this.buffer = "";
    }
    const open = this.stack.at(-1);
    if (open) {
      const names = this.stack.map((e) => `<${e.name}>`).join(" ");
      this.handler.error(`file ends with ${names} still open (innermost from line ${open.line})`, this.line);
    }
  }

  private drain(final: boolean): void {
    let pos = 0;
    const buf = this.buffer;
    while (pos < buf.length) {
      const lt = buf.indexOf("<", pos);
      if (lt < 0) {
        // Keep text that may end in a half-read entity until the next chunk shows its end.
        const amp = buf.lastIndexOf("&");
        const cut = final || amp < pos || buf.indexOf(";", amp) >= 0 ? buf.length : amp;
        this.emitText(buf.slice(pos, cut));
        pos = cut;
        break;
      }
      if (lt > pos) {
        this.emitText(buf.slice(pos, lt));
        pos = lt;
      }
      const consumed = this.markup(buf, pos, final);
      if (consumed === 0) break;
      this.countLines(buf, pos, pos + consumed);
      pos += consumed;
    }
    this.buffer = buf.slice(pos);
  }

  /** Handles the markup at `pos` ("<…"); returns the characters used, or 0 when it needs more input. */
  private markup(buf: string, pos: number, final: boolean): number {
    const rest = (prefix: string) => buf.startsWith(prefix, pos);
    if (rest("<!--")) return this.skipTo(buf, pos, "-->", final, "comment");
    if (rest("<![CDATA[")) {
      const end = buf.indexOf("]]>", pos + 9);
      if (end < 0) return final ? this.unterminated(buf, pos, "CDATA section") : 0;
      this.handler.text(buf.slice(pos + 9, end));
      return end + 3 - pos;
    }
    if (rest("<?")) return this.skipTo(buf, pos, "?>", final, "processing instruction");
    if (rest("<!")) return this.doctype(buf, pos, final);
    if (buf.length - pos < 2 && !final) return 0;
    const closing = buf[pos + 1] === "/";
    const nameAt = closing ? pos + 2 : pos + 1;
    if (nameAt >= buf.length && !final) return 0;
    if (!NAME_START.test(buf[nameAt] ?? "")) {
      this.handler.error("'<' that starts no tag (write &lt; in text)", this.line);
      this.handler.text("<");
      return 1;
    }
    const end = tagEnd(buf, pos);
    if (end === INCOMPLETE) return final ? this.unterminated(buf, pos, "tag") : 0;
    if (buf[end] === "<") {
      this.handler.error(
        `tag ${JSON.stringify(buf.slice(pos, Math.min(end, pos + 40)))} has no closing '>'`,
        this.line,
      );
      return end - pos;
    }
    const tag = buf.slice(nameAt, end);
    if (closing) this.closeTag(tag.trim());
    else this.openTag(tag);
    return end + 1 - pos;
  }

  private openTag(tag: string): void {
    const selfClosing = tag.endsWith("/");
    const body = selfClosing ? tag.slice(0, -1) : tag;
    const nameEnd = body.search(/[\s]/);
    const name = nameEnd < 0 ? body : body.slice(0, nameEnd);
    const attributes: Record<string, string> = {};
    const attributeText = nameEnd < 0 ? "" : body.slice(nameEnd);
    let leftover = attributeText;
    for (const m of attributeText.matchAll(ATTRIBUTE)) {
      attributes[m[1]!] = this.decode(m[2] ?? m[3] ?? "");
      leftover = leftover.replace(m[0], "");
    }
    if (leftover.trim())
      this.handler.error(`malformed attributes in <${name}>: ${leftover.trim().slice(0, 40)}`, this.line);
    this.handler.open(name, attributes, this.line);
    if (selfClosing) this.handler.close(name, this.line);
    else this.stack.push({ name, line: this.line });
  }

  private closeTag(name: string): void {
    const at = this.stack.map((e) => e.name).lastIndexOf(name);
    if (at < 0) {
      this.handler.error(`</${name}> closes nothing`, this.line);
      return;
    }
    while (this.stack.length - 1 > at) {
      const skipped = this.stack.pop()!;
      this.handler.error(`<${skipped.name}> from line ${skipped.line} is not closed before </${name}>`, this.line);
      this.handler.close(skipped.name, this.line);
    }
    this.stack.pop();
    this.handler.close(name, this.line);
  }

  private doctype(buf: string, pos: number, final: boolean): number {
    // A DOCTYPE may hold an internal subset in brackets, itself full of '>'.
    let depth = 0;
    for (let i = pos + 2; i < buf.length; i++) {
      const c = buf[i];
      if (c === "[") depth++;
      else if (c === "]") depth--;
      else if (c === ">" && depth <= 0) return i + 1 - pos;
    }
    return final ? this.unterminated(buf, pos, "declaration") : 0;
  }

  private skipTo(buf: string, pos: number, terminator: string, final: boolean, what: string): number {
    const end = buf.indexOf(terminator, pos);
    if (end < 0) return final ? this.unterminated(buf, pos, what) : 0;
    return end + terminator.length - pos;
  }

  private unterminated(buf: string, pos: number, what: string): number {
    this.handler.error(`unterminated ${what} at end of file`, this.line);
    return buf.length - pos;
  }

  private emitText(raw: string): void {
    if (!raw) return;
    this.handler.text(this.decode(raw));
    this.countLines(raw, 0, raw.length);
  }

  private countLines(text: string, from: number, to: number): void {
    for (let i = text.indexOf("\n", from); i >= 0 && i < to; i = text.indexOf("\n", i + 1)) this.line++;
  }

  private decode(raw: string): string {
    if (!raw.includes("&")) return raw;
    return raw.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z][\w.-]*)?(;?)/g, (whole, ref: string | undefined, semi) => {
      if (ref && semi) {
        if (ref.startsWith("#")) {
          const code = ref[1] === "x" ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
          if (code > 0 && code <= 0x10ffff) return String.fromCodePoint(code);
        } else {
          const named = ENTITIES[ref];
          if (named) return named;
        }
      }
      this.handler.error(`unknown or unterminated entity ${whole}${ref && !semi ? "…" : ""}`, this.line);
      return whole;
    });
  }
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

const INCOMPLETE = -1;

/**
 * Index of the '>' that ends the tag starting at `pos` (skipping '>' inside quoted values), of a '<'
 * that shows the tag was never closed, or INCOMPLETE when the buffer ends first.
 */
function tagEnd(buf: string, pos: number): number {
  let quote = "";
  for (let i = pos + 1; i < buf.length; i++) {
    const c = buf[i]!;
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ">") return i;
    else if (c === "<") return i;
  }
  return INCOMPLETE;
}

/** An element of one record, kept whole so the importer can read it after it closes. */
export interface XmlElement {
  /** Local name: namespace prefixes dropped (`min:definition` → `definition`). */
  name: string;
  attributes: Record<string, string>;
  children: Array<XmlElement | string>;
  line: number;
}

export interface RecordProblem {
  message: string;
  line: number;
}

/**
 * Streams an XML file and hands over each record element (e.g. `termEntry`, `tu`) as a small tree,
 * with the well-formedness problems found inside it. Elements outside records go to `onOutside`
 * (headers carry defaults such as TMX's `srclang`). Problems outside any record go to `onProblem`.
 */
export async function readXmlRecords(
  file: string,
  recordNames: ReadonlySet<string>,
  handlers: {
    onRecord(record: XmlElement, problems: RecordProblem[]): void;
    onOutside?(name: string, attributes: Record<string, string>): void;
    onProblem(problem: RecordProblem): void;
  },
): Promise<void> {
  let path: XmlElement[] = [];
  let problems: RecordProblem[] = [];
  const tokenizer = new XmlTokenizer({
    open(rawName, attributes, line) {
      const name = localName(rawName);
      if (path.length === 0 && !recordNames.has(name)) {
        handlers.onOutside?.(name, attributes);
        return;
      }
      const element: XmlElement = { name, attributes, children: [], line };
      path.at(-1)?.children.push(element);
      path.push(element);
    },
    close() {
      const element = path.pop();
      if (element && path.length === 0) {
        handlers.onRecord(element, problems);
        problems = [];
      }
    },
    text(text) {
      path.at(-1)?.children.push(text);
    },
    error(message, line) {
      if (path.length > 0) problems.push({ message, line });
      else handlers.onProblem({ message, line });
    },
  });
  const raw = createReadStream(file, { highWaterMark: 1 << 16 });
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  let decoder: TextDecoder | undefined;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      decoder ??= new TextDecoder(sniffEncoding(chunk));
      tokenizer.write(decoder.decode(chunk, { stream: true }));
    }
    if (decoder) tokenizer.write(decoder.decode());
  } finally {
    raw.destroy();
  }
  tokenizer.end();
  if (path.length > 0) {
    // A truncated file: the record that was being read is incomplete.
    const record = path[0]!;
    handlers.onRecord(record, [
      { message: `file ends inside <${record.name}> opened at line ${record.line}`, line: record.line },
      ...problems,
    ]);
    path = [];
  }
}

/** BOM first, then the XML declaration's encoding, else UTF-8. TMX files are often UTF-16. */
function sniffEncoding(head: Buffer): string {
  if (head[0] === 0xff && head[1] === 0xfe) return "utf-16le";
  if (head[0] === 0xfe && head[1] === 0xff) return "utf-16be";
  if (head[0] === 0x3c && head[1] === 0x00) return "utf-16le";
  if (head[0] === 0x00 && head[1] === 0x3c) return "utf-16be";
  const declared = /^\s*<\?xml[^>]*encoding=["']([\w.-]+)["']/.exec(head.subarray(0, 200).toString("latin1"))?.[1];
  if (declared) {
    try {
      return new TextDecoder(declared).encoding;
    } catch {
      // An encoding label TextDecoder does not know: read as UTF-8, which most such files are.
    }
  }
  return "utf-8";
}

export function localName(name: string): string {
  const colon = name.indexOf(":");
  return colon < 0 ? name : name.slice(colon + 1);
}

/** Concatenated text of an element, leaving out the children named in `skip` (inline codes). */
export function textOf(element: XmlElement, skip: ReadonlySet<string> = new Set()): string {
  let out = "";
  for (const child of element.children) {
    if (typeof child === "string") out += child;
    else if (!skip.has(child.name)) out += textOf(child, skip);
  }
  return out;
}

export function childrenNamed(element: XmlElement, names: ReadonlySet<string>): XmlElement[] {
  return element.children.filter((c): c is XmlElement => typeof c !== "string" && names.has(c.name));
}

/** `xml:lang`, or TMX 1.1's `lang`. */
export function langOf(element: XmlElement): string | undefined {
  return element.attributes["xml:lang"] ?? element.attributes.lang;
}
