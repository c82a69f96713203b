import { createReadStream } from "node:fs";
import { createGunzip } from "node:zlib";

/**
 * Streams the lines of a file as raw bytes (gzip when the name ends in .gz), for encodings that a
 * UTF-8 line reader would garble. Splitting on 0x0A is safe for EUC-JP, Shift-JIS's and GB's ASCII
 * range and UTF-8 alike: no multi-byte sequence in them contains that byte. A trailing CR is dropped.
 */
export async function* readByteLines(file: string): AsyncGenerator<{ bytes: Buffer; number: number }> {
  const raw = createReadStream(file, { highWaterMark: 1 << 16 });
  const input = file.endsWith(".gz") ? raw.pipe(createGunzip()) : raw;
  let pending: Buffer | null = null;
  let number = 0;
  const line = (bytes: Buffer) => {
    number++;
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    return { bytes: bytes.subarray(0, end), number };
  };
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
        const piece = chunk.subarray(start, nl);
        yield line(pending ? Buffer.concat([pending, piece]) : piece);
        pending = null;
        start = nl + 1;
      }
      if (start < chunk.length) {
        const rest = chunk.subarray(start);
        pending = pending ? Buffer.concat([pending, rest]) : Buffer.from(rest);
      }
    }
    if (pending && pending.length > 0) yield line(pending);
  } finally {
    raw.destroy();
  }
}
