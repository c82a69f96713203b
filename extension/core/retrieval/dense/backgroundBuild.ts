import { existsSync } from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { DenseBuildCancelled, type DenseBuildHooks, type DenseBuildRequest, type DenseBuildResult } from "./denseBuild";
import type { SentenceEncoderOptions } from "./encoder";
import { packPassages, type WorkerReply, type WorkerRequest } from "./workerProtocol";

type WorkerStart = Extract<WorkerRequest, { type: "start" }>;

export interface BackgroundBuildOptions extends DenseBuildHooks {
  /** The worker script; defaults to dense-build-worker.js beside the bundle, or the TypeScript source under tsx. */
  workerScript?: string;
  /** Milliseconds a cancelled worker gets to save its checkpoint before it is terminated. Default 60 000. */
  cancelGraceMs?: number;
}

/** A failure inside the build worker, with the error's name, code and message as the worker saw them. */
export class DenseBuildFailed extends Error {
  override readonly name = "DenseBuildFailed";
  constructor(
    message: string,
    readonly causeName: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Runs `buildDenseIndex` in a worker thread with its own encoder, so the editor's thread stays free.
 * Resolves with the build result; rejects with DenseBuildCancelled after the worker saved its checkpoint
 * when `signal` aborts, or with DenseBuildFailed.
 */
export function buildDenseIndexInBackground(
  request: DenseBuildRequest | (Omit<DenseBuildRequest, "passages"> & { lexicalIndex: string }),
  encoder: SentenceEncoderOptions,
  options: BackgroundBuildOptions = {},
): Promise<DenseBuildResult> {
  const total = "passages" in request ? request.passages.length : 0;
  const source: WorkerStart["request"] =
    "passages" in request
      ? (({ passages, ...rest }) => ({ ...rest, packed: packPassages(passages) }))(request)
      : request;
  const script = options.workerScript ?? defaultWorkerScript();
  const worker = new Worker(script, {
    ...(script.endsWith(".ts") ? { execArgv: ["--require", require.resolve("tsx/cjs")] } : {}),
  });
  return new Promise<DenseBuildResult>((resolve, reject) => {
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener("abort", onAbort);
      if (killTimer) clearTimeout(killTimer);
      fn();
    };
    const onAbort = () => {
      worker.postMessage({ type: "abort" } satisfies WorkerRequest);
      killTimer = setTimeout(() => {
        void worker.terminate();
        settle(() => reject(new DenseBuildCancelled({ done: 0, total })));
      }, options.cancelGraceMs ?? 60_000);
    };
    worker.on("message", (message: WorkerReply) => {
      switch (message.type) {
        case "progress":
          options.onProgress?.(message.progress);
          break;
        case "done":
          settle(() => resolve(message.result));
          break;
        case "cancelled":
          settle(() => reject(new DenseBuildCancelled(message.progress)));
          break;
        case "failed":
          settle(() => reject(new DenseBuildFailed(message.error.message, message.error.name, message.error.code)));
          break;
      }
    });
    worker.on("error", (err) =>
      settle(() => reject(new DenseBuildFailed(`Dense build worker crashed: ${err.message}`, err.name))),
    );
    worker.on("exit", (code) =>
      settle(() => reject(new DenseBuildFailed(`Dense build worker exited (code ${code}) without a result`, "Exit"))),
    );
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    worker.postMessage({ type: "start", request: source, encoder } satisfies WorkerRequest);
  });
}

function defaultWorkerScript(): string {
  const bundled = path.join(__dirname, "dense-build-worker.js");
  if (existsSync(bundled)) return bundled;
  return path.join(__dirname, "denseBuildWorker.ts");
}
