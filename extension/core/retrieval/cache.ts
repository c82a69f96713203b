import { appendFile, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

export interface LruCacheOptions {
  /** Most entries kept; the least recently used one is dropped beyond it. 0 disables the cache. */
  maxEntries: number;
  /** Entries older than this are treated as absent (and dropped when met). Unset: never expire. */
  ttlMs?: number;
  /** Clock, replaceable so expiry can be tested without waiting. */
  now?: () => number;
}

interface Slot<V> {
  value: V;
  storedAt: number;
}

/**
 * A bounded least-recently-used cache. A `Map` keeps insertion order, so re-inserting a key on
 * every read makes the first key the least recently used one: get, set and eviction are O(1).
 */
export class LruCache<V> {
  hits = 0;
  misses = 0;
  private readonly slots = new Map<string, Slot<V>>();
  private readonly now: () => number;

  constructor(private readonly options: LruCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.slots.size;
  }

  get(key: string): V | undefined {
    const slot = this.slots.get(key);
    if (!slot || this.expired(slot.storedAt)) {
      if (slot) this.slots.delete(key);
      this.misses++;
      return undefined;
    }
    this.slots.delete(key);
    this.slots.set(key, slot);
    this.hits++;
    return slot.value;
  }

  set(key: string, value: V, storedAt = this.now()): void {
    if (this.options.maxEntries <= 0 || this.expired(storedAt)) return;
    this.slots.delete(key);
    this.slots.set(key, { value, storedAt });
    while (this.slots.size > this.options.maxEntries) {
      const oldest = this.slots.keys().next().value;
      if (oldest === undefined) break;
      this.slots.delete(oldest);
    }
  }

  clear(): void {
    this.slots.clear();
  }

  /** Live entries, least recently used first, with the time each was stored. */
  *entries(): IterableIterator<[string, V, number]> {
    for (const [key, slot] of this.slots) if (!this.expired(slot.storedAt)) yield [key, slot.value, slot.storedAt];
  }

  private expired(storedAt: number): boolean {
    return this.options.ttlMs !== undefined && this.now() - storedAt > this.options.ttlMs;
  }
}

/** What loading a cache file found: lines it could not use are counted, never fatal. */
export interface CacheLoadReport {
  file: string;
  loaded: number;
  expired: number;
  malformed: number;
}

/**
 * An LRU cache mirrored to a JSONL file (`{"key", "value", "storedAt"}` per line) so results survive a
 * restart. Each `set` appends one line; a later line for a key wins over an earlier one. When the file
 * holds more than twice `maxEntries` lines it is rewritten with the live entries only, through a
 * temporary file and a rename, so a reader never sees a half-written file. Appends from two processes
 * sharing a file interleave whole lines (each is a single `write` in append mode); a torn or foreign
 * line is skipped and counted on the next load. Writes are queued in order; `flush()` awaits them.
 */
export class JsonlLruCache<V> {
  readonly memory: LruCache<V>;
  private linesInFile = 0;
  private writes: Promise<void> = Promise.resolve();
  private writeError: Error | undefined;

  private constructor(
    readonly file: string,
    private readonly options: LruCacheOptions,
  ) {
    this.memory = new LruCache<V>(options);
  }

  /** Opens (or starts) the cache file; a missing file is an empty cache, an unreadable one an error. */
  static async open<V>(
    file: string,
    options: LruCacheOptions,
  ): Promise<{ cache: JsonlLruCache<V>; report: CacheLoadReport }> {
    const cache = new JsonlLruCache<V>(file, options);
    const report: CacheLoadReport = { file, loaded: 0, expired: 0, malformed: 0 };
    let text = "";
    try {
      text = await readFile(file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
        throw new Error(`Cannot read the result cache ${file}: ${(e as Error).message}`);
      }
    }
    const now = (options.now ?? Date.now)();
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      cache.linesInFile++;
      let record: { key?: unknown; value?: unknown; storedAt?: unknown };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        report.malformed++;
        continue;
      }
      if (typeof record.key !== "string" || typeof record.storedAt !== "number" || record.value === undefined) {
        report.malformed++;
        continue;
      }
      if (options.ttlMs !== undefined && now - record.storedAt > options.ttlMs) {
        report.expired++;
        continue;
      }
      cache.memory.set(record.key, record.value as V, record.storedAt);
    }
    // Counted after the fact: later lines replace earlier ones for a key, and the bound drops the oldest.
    report.loaded = cache.memory.size;
    return { cache, report };
  }

  get(key: string): V | undefined {
    return this.memory.get(key);
  }

  set(key: string, value: V): void {
    const storedAt = (this.options.now ?? Date.now)();
    this.memory.set(key, value, storedAt);
    if (this.options.maxEntries <= 0) return;
    const line = `${JSON.stringify({ key, value, storedAt })}\n`;
    this.linesInFile++;
    const compact = this.linesInFile > 2 * this.options.maxEntries;
    this.enqueue(async () => {
      await mkdir(dirname(this.file), { recursive: true });
      if (compact) await this.rewrite();
      else await appendFile(this.file, line, "utf8");
    });
  }

  /** Waits for queued writes; rejects with the first write failure (a full disk, a read-only folder). */
  async flush(): Promise<void> {
    await this.writes;
    if (this.writeError) throw this.writeError;
  }

  private enqueue(write: () => Promise<void>): void {
    this.writes = this.writes.then(write).catch((e: unknown) => {
      this.writeError ??= new Error(`Cannot write the result cache ${this.file}: ${(e as Error).message}`);
    });
  }

  private async rewrite(): Promise<void> {
    const lines: string[] = [];
    for (const [key, value, storedAt] of this.memory.entries()) lines.push(JSON.stringify({ key, value, storedAt }));
    const tmp = `${this.file}.${process.pid}.tmp`;
    await writeFile(tmp, lines.length ? `${lines.join("\n")}\n` : "", "utf8");
    await rename(tmp, this.file);
    this.linesInFile = lines.length;
  }
}
