import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";
import { readLines } from "./lines";

/** One top-level record of a JSON collection, parsed, or the reason it could not be. */
export type JsonRecord =
  | { ok: true; value: unknown; key?: string; line: number }
  | { ok: false; reason: string; line: number };

/**
 * Streams the records of a JSON collection in any of three shapes, without parsing the file whole:
 * JSON Lines (one value a line), a top-level array (each element), or a top-level object used as a
 * map (each member, with its key). A record that does not parse is reported and reading goes on;
 * a blank line or empty element yields nothing.
 */
export async function* readJsonRecords(file: string): AsyncGenerator<JsonRecord> {
  const shape = await detectShape(file);
  if (shape === "lines") {
    for await (const { line, number } of readLines(file)) {
      if (!line.trim()) continue;
      yield parse(line, number);
    }
    return;
  }
  yield* splitContainer(file, shape);
}

async function detectShape(file: string): Promise<"lines" | "array" | "object"> {
  for await (const { line } of readLines(file)) {
    const head = line.trimStart();
    if (!head) continue;
    if (head.startsWith("[")) return "array";
    if (!head.startsWith("{")) return "lines";
    try {
      JSON.parse(line);
      return "lines";
    } catch {
      return "object";
    }
  }
  return "lines";
}

function parse(text: string, line: number, key?: string): JsonRecord {
  try {
    const value: unknown = JSON.parse(text);
    return key === undefined ? { ok: true, value, line } : { ok: true, value, key, line };
  } catch (error) {
    return { ok: false, reason: `not valid JSON (${(error as Error).message})`, line };
  }
}

/**
 * Cuts the elements of a top-level array (or the members of a top-level object) out of the byte
 * stream by tracking strings and bracket depth; only the element being read is held in memory.
 */
async function* splitContainer(file: string, shape: "array" | "object"): AsyncGenerator<JsonRecord> {
  const raw = createReadStream(file, { highWaterMark: 1 << 16 });
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  const decoder = new TextDecoder("utf-8");
  let depth = 0;
  let inString = false;
  let escaped = false;
  let line = 1;
  let current = "";
  let currentLine = 0;
  const finish = (): JsonRecord | undefined => {
    const text = current.trim();
    current = "";
    if (!text) return undefined;
    if (shape === "array") return parse(text, currentLine);
    const member = parse(`{${text}}`, currentLine);
    if (!member.ok) return member;
    const [entry] = Object.entries(member.value as Record<string, unknown>);
    return entry ? { ok: true, key: entry[0], value: entry[1], line: currentLine } : undefined;
  };
  let awaitingStart = false;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      const text = decoder.decode(chunk, { stream: true }).replace(/^\uFEFF/, "");
      let from = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text[i]!;
        if (c === "\n") line++;
        if (inString) {
          if (escaped) escaped = false;
          else if (c === "\\") escaped = true;
          else if (c === '"') inString = false;
          continue;
        }
        if (awaitingStart && depth === 1 && !" \t\r\n,]}".includes(c)) {
          currentLine = line;
          awaitingStart = false;
        }
        if (c === '"') inString = true;
        else if (c === "[" || c === "{") {
          depth++;
          if (depth === 1) {
            from = i + 1;
            awaitingStart = true;
          }
        } else if ((c === "]" || c === "}") && --depth === 0) {
          current += text.slice(from, i);
          const record = finish();
          if (record) yield record;
          from = i + 1;
        } else if (c === "," && depth === 1) {
          current += text.slice(from, i);
          const record = finish();
          if (record) yield record;
          from = i + 1;
          awaitingStart = true;
        }
      }
      if (depth >= 1) current += text.slice(from);
    }
  } finally {
    raw.destroy();
  }
  if (depth !== 0 || current.trim()) {
    yield { ok: false, reason: "file ends inside the top-level collection (truncated?)", line: currentLine || line };
  }
}
