/**
 * Worker-thread entry for importing corpora into the index store: parsing a large dictionary and
 * building its lexical index takes a minute or more, which must not run on the editor's thread.
 * In: {root, specs, force, prune}. Out: `progress` messages, then `done` with the UpdateResult or `failed`.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { CorpusSpec } from "./corpora";
import { IndexStore } from "./indexStore";

const port = parentPort;
if (!port) throw new Error("indexUpdateWorker must run in a worker thread");
const { root, specs, force, prune } = workerData as {
  root: string;
  specs: CorpusSpec[];
  force: boolean;
  prune: boolean;
};
new IndexStore(root, { onProgress: (message) => port.postMessage({ type: "progress", message }) })
  .update(specs, { force, prune })
  .then((result) => port.postMessage({ type: "done", result }))
  .catch((e: unknown) => {
    const error = e instanceof Error ? e : new Error(String(e));
    const { indexDir, reason } = e as { indexDir?: string; reason?: string };
    port.postMessage({ type: "failed", name: error.name, message: error.message, indexDir, reason });
  });
