import assert from "node:assert/strict";
import { appendFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_LIMITS, type Trajectory } from "../../../extension/core/agent/types";
import { FEEDBACK_SCHEMA, FeedbackStore, makeRecord } from "../../../extension/core/feedback/store";

const trajectory: Trajectory = {
  schema: "glossa.trajectory/1",
  request: {
    text: "内卷",
    sourceLang: "zh",
    targetLang: "en",
    mode: "selective",
    style: "neoamt",
    limits: DEFAULT_LIMITS,
  },
  policyId: "openai:http://127.0.0.1:1/v1#m",
  corpusIds: ["demo"],
  raw: "<translation>involution</translation>",
  steps: [{ kind: "translation", text: "involution", syntax: "translation", closed: true }],
  translation: "involution",
  searches: 0,
  turns: 1,
  completionTokens: 3,
  promptTokens: 10,
  timings: { startedAt: new Date(0).toISOString(), firstEventMs: 1, totalMs: 2, retrievalMs: 0 },
  warnings: [],
};

const base = {
  location: { file: "notes/a.md", startLine: 0, startCharacter: 0, endLine: 0, endCharacter: 2 },
  source: "内卷",
  sourceLang: "zh",
  targetLang: "en",
  context: null,
  trajectory,
  comment: null,
};

describe("feedback log", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "glossa-fb-"));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("appends one versioned record per decision, schema first", async () => {
    const store = new FeedbackStore(join(dir, "sub", "feedback.jsonl"));
    await store.append(makeRecord({ ...base, decision: "accepted", finalText: "involution", rating: null }));
    await store.append(makeRecord({ ...base, decision: "rated", finalText: null, rating: 4, comment: "fine" }));
    const { records, malformed } = await store.readAll();
    assert.deepEqual(malformed, []);
    assert.equal(records.length, 2);
    assert.equal(Object.keys(records[0]!)[0], "schema");
    assert.equal(records[0]?.schema, FEEDBACK_SCHEMA);
    assert.equal(records[0]?.output, "involution");
    assert.equal(records[1]?.rating, 4);
    assert.equal(records[1]?.policyId, trajectory.policyId);
    assert.notEqual(records[0]?.id, records[1]?.id);
  });

  it("rejects a rating outside 1-5", () => {
    assert.throws(() => makeRecord({ ...base, decision: "rated", finalText: null, rating: 6 }), RangeError);
    assert.throws(() => makeRecord({ ...base, decision: "rated", finalText: null, rating: 2.5 }), RangeError);
  });

  it("keeps a record queued when the write fails, and writes it once the path is writable", async () => {
    const file = join(dir, "blocked");
    await mkdir(file); // a directory where the log should be: every append fails (EISDIR)
    const store = new FeedbackStore(file);
    const record = makeRecord({ ...base, decision: "rejected", finalText: null, rating: null });
    await assert.rejects(store.append(record), /EISDIR/);
    assert.equal(store.pending, 1);
    await rm(file, { recursive: true });
    await store.flush();
    assert.equal(store.pending, 0);
    const { records } = await store.readAll();
    assert.equal(records[0]?.id, record.id);
  });

  it("skips and reports a torn last line instead of failing", async () => {
    const store = new FeedbackStore(join(dir, "f.jsonl"));
    await store.append(makeRecord({ ...base, decision: "accepted", finalText: "x", rating: null }));
    await appendFile(store.file, '{"schema":"glossa.feedback/1","id":');
    const { records, malformed } = await store.readAll();
    assert.equal(records.length, 1);
    assert.deepEqual(malformed, [2]);
  });
});
