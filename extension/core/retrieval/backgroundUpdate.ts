import { existsSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { CorpusSpec } from "./corpora";
import { IndexCorruptError, IndexLockedError, type UpdateResult } from "./indexStore";

type WorkerMessage =
  | { type: "progress"; message: string }
  | { type: "done"; result: UpdateResult }
  | { type: "failed"; name: string; message: string; indexDir?: string; reason?: string };

/**
 * IndexStore.update in a worker thread, with the same result and the same typed errors; the caller's
 * thread only receives progress messages. The store's lock still guards against other processes.
 */
export function updateIndexInBackground(
  root: string,
  specs: CorpusSpec[],
  options: { force?: boolean; prune?: boolean; onProgress?: (message: string) => void; workerScript?: string } = {},
): Promise<UpdateResult> {
  const script = options.workerScript ?? defaultWorkerScript();
  const worker = new Worker(script, {
    workerData: { root, specs, force: options.force ?? false, prune: options.prune ?? false },
    ...(script.endsWith(".ts") ? { execArgv: ["--require", require.resolve("tsx/cjs")] } : {}),
  });
  return new Promise<UpdateResult>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (!settled) {
        settled = true;
        fn();
        void worker.terminate();
      }
    };
    worker.on("message", (m: WorkerMessage) => {
      if (m.type === "progress") options.onProgress?.(m.message);
      else if (m.type === "done") settle(() => resolve(m.result));
      else settle(() => reject(rebuildError(m)));
    });
    worker.on("error", (e) => settle(() => reject(new Error(`The index worker crashed: ${e.message}`))));
    worker.on("exit", (code) =>
      settle(() => reject(new Error(`The index worker exited (code ${code}) without a result`))),
    );
  });
}

/** Errors cross the thread boundary as plain data; give the caller back the class it can catch. */
function rebuildError(m: Extract<WorkerMessage, { type: "failed" }>): Error {
  if (m.name === "IndexCorruptError") return new IndexCorruptError(m.indexDir ?? "", m.reason ?? m.message);
  if (m.name === "IndexLockedError") return new IndexLockedError(m.message);
  const error = new Error(m.message);
  error.name = m.name;
  return error;
}

function defaultWorkerScript(): string {
  const bundled = path.join(__dirname, "index-update-worker.js");
  return existsSync(bundled) ? bundled : path.join(__dirname, "indexUpdateWorker.ts");
}
