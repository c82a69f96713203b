import { promises as fs } from "node:fs";

/** The @huggingface/transformers module, as the embedded policy and the sentence encoder use it. */
export type Transformers = typeof import("@huggingface/transformers");

/**
 * Loads @huggingface/transformers set to read local model folders only (no hub access). Rejects with an
 * Error whose message says in one line why the runtime could not load; callers wrap it in their own type.
 */
export async function loadLocalRuntime(): Promise<Transformers> {
  let lib: Transformers;
  try {
    lib = await import("@huggingface/transformers");
  } catch (err) {
    throw new Error(`Cannot load the model runtime (@huggingface/transformers): ${firstLine(err)}`, { cause: err });
  }
  lib.env.allowRemoteModels = false;
  lib.env.allowLocalModels = true;
  return lib;
}

/** The first line of an error's message, trimmed (runtime errors carry long native traces). */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split("\n")[0] ?? message).trim();
}

export async function isDirectory(p: string): Promise<boolean> {
  return (await fs.stat(p).catch(() => null))?.isDirectory() ?? false;
}

export async function isFile(p: string): Promise<boolean> {
  return (await fs.stat(p).catch(() => null))?.isFile() ?? false;
}
