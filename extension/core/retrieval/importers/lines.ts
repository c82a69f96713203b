import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { createGunzip } from "node:zlib";

/** Streams the lines of a text file (gzip when the name ends in .gz) without loading it whole. */
export async function* readLines(file: string): AsyncGenerator<{ line: string; number: number }> {
  const raw = createReadStream(file);
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  try {
    for await (const line of lines) {
      number++;
      yield { line: number === 1 ? line.replace(/^\uFEFF/, "") : line, number };
    }
  } finally {
    lines.close();
    raw.destroy();
  }
}
