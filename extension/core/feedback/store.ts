import { randomUUID } from "node:crypto";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Trajectory } from "../agent/types";

export const FEEDBACK_SCHEMA = "glossa.feedback/1";

export type Decision = "accepted" | "edited" | "rejected" | "rated";

/** One translator decision. `schema` comes first so a reader can dispatch on it before reading the rest. */
export interface FeedbackRecord {
  schema: typeof FEEDBACK_SCHEMA;
  id: string;
  time: string;
  /** Workspace-relative file and range, or an untitled document's name. */
  location: { file: string; startLine: number; startCharacter: number; endLine: number; endCharacter: number } | null;
  source: string;
  sourceLang: string;
  targetLang: string;
  context: string | null;
  trajectory: Trajectory;
  /** What the policy produced (null when it failed). */
  output: string | null;
  decision: Decision;
  /** The text the translator kept: the output, their edit, or null for a rejection or a rating alone. */
  finalText: string | null;
  rating: number | null;
  comment: string | null;
  policyId: string;
  corpusIds: string[];
}

export type NewFeedback = Omit<FeedbackRecord, "schema" | "id" | "time" | "policyId" | "corpusIds" | "output">;

export function makeRecord(input: NewFeedback, now = new Date()): FeedbackRecord {
  if (input.rating !== null && !(Number.isInteger(input.rating) && input.rating >= 1 && input.rating <= 5)) {
    throw new RangeError(`A rating is an integer from 1 to 5, not ${input.rating}.`);
  }
  return {
    schema: FEEDBACK_SCHEMA,
    id: randomUUID(),
    time: now.toISOString(),
    location: input.location,
    source: input.source,
    sourceLang: input.sourceLang,
    targetLang: input.targetLang,
    context: input.context,
    trajectory: input.trajectory,
    output: input.trajectory.translation,
    decision: input.decision,
    finalText: input.finalText,
    rating: input.rating,
    comment: input.comment,
    policyId: input.trajectory.policyId,
    corpusIds: input.trajectory.corpusIds,
  };
}

/**
 * An append-only JSONL log of decisions. Each record is written with one append call, so a crash
 * leaves at most one partial last line, which `readAll` reports and skips. When a write fails
 * (full disk, permissions) the record stays queued in memory and is written first on the next
 * append or `flush`, so nothing a translator decided is lost while the editor runs.
 */
export class FeedbackStore {
  private readonly queue: FeedbackRecord[] = [];

  constructor(readonly file: string) {}

  get pending(): number {
    return this.queue.length;
  }

  /** Appends a record; rejects with the write error (the record stays queued). */
  async append(record: FeedbackRecord): Promise<void> {
    this.queue.push(record);
    await this.flush();
  }

  async flush(): Promise<void> {
    if (this.queue.length === 0) return;
    await mkdir(dirname(this.file), { recursive: true });
    const lines = this.queue.map((r) => `${JSON.stringify(r)}\n`).join("");
    await appendFile(this.file, lines, { encoding: "utf8", flag: "a" });
    this.queue.length = 0;
  }

  /** Reads every well-formed record; malformed lines are reported with their line numbers, not thrown. */
  async readAll(): Promise<{ records: FeedbackRecord[]; malformed: number[] }> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return { records: [], malformed: [] };
      throw e;
    }
    const records: FeedbackRecord[] = [];
    const malformed: number[] = [];
    text.split("\n").forEach((line, i) => {
      if (!line.trim()) return;
      try {
        const value = JSON.parse(line) as FeedbackRecord;
        if (value.schema === FEEDBACK_SCHEMA) records.push(value);
        else malformed.push(i + 1);
      } catch {
        malformed.push(i + 1);
      }
    });
    return { records, malformed };
  }
}
