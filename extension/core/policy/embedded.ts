import path from "node:path";
import type { PreTrainedModel, PreTrainedTokenizer, Tensor } from "@huggingface/transformers";
import { firstLine, isDirectory, isFile, loadLocalRuntime, type Transformers } from "../modelRuntime";
import { declaredExternalData, modelFiles } from "./modelStore";
import {
  type FinishReason,
  type GenerateDelta,
  type GenerateRequest,
  type GenerateSummary,
  type PolicyBackend,
  PolicyError,
} from "./types";

export interface EmbeddedPolicyOptions {
  /** Local model folder: config.json, tokenizer.json, tokenizer_config.json, onnx/model<suffix>.onnx. */
  modelPath: string;
  /** Recorded in the backend id instead of the folder name (e.g. the hub id the folder was downloaded from). */
  modelId?: string;
  /** ONNX weights to load: `fp32` (onnx/model.onnx, the default) or `q8` (onnx/model_quantized.onnx), ... */
  dtype?: string;
  /** ONNX Runtime intra-op threads; the runtime's default when omitted. */
  threads?: number;
  /**
   * How to fix a missing model, ending the "model-missing" message (e.g. the CLI names its flags).
   * Default: "set glossa.policy.modelPath to a local ONNX model folder, or configure an endpoint".
   */
  hint?: string;
}

export interface EmbeddedModel {
  lib: Transformers;
  tokenizer: PreTrainedTokenizer;
  model: PreTrainedModel;
  eosIds: number[];
}

const DEFAULT_HINT = "set glossa.policy.modelPath to a local ONNX model folder, or configure an endpoint";

/**
 * The policy model running in-process with @huggingface/transformers (ONNX Runtime on the CPU).
 * The model loads on first use and stays loaded until `dispose()`; generation is greedy.
 */
export class EmbeddedPolicy implements PolicyBackend {
  readonly id: string;
  private readonly modelPath: string;
  private loading: Promise<EmbeddedModel> | undefined;
  /** Generations run one at a time on the shared session. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly options: EmbeddedPolicyOptions) {
    this.modelPath = path.resolve(options.modelPath);
    this.id = `embedded:${options.modelId || path.basename(this.modelPath)}`;
  }

  async *stream(request: GenerateRequest): AsyncGenerator<GenerateDelta, GenerateSummary, void> {
    const { signal } = request;
    if (signal?.aborted) throw abortedError();
    const loaded = await this.load();
    const release = await this.acquire();
    try {
      if (signal?.aborted) throw abortedError();
      return yield* this.generate(loaded, request);
    } finally {
      release();
    }
  }

  /** Loads the model now (otherwise it loads on the first `stream`). */
  async load(): Promise<EmbeddedModel> {
    if (!this.loading) {
      this.loading = this.doLoad();
      this.loading.catch(() => {
        this.loading = undefined; // let a later call retry, e.g. after the folder was fixed
      });
    }
    return this.loading;
  }

  async dispose(): Promise<void> {
    const loading = this.loading;
    this.loading = undefined;
    if (!loading) return;
    await this.queue;
    try {
      const { model } = await loading;
      await model.dispose();
    } catch {
      // a model that failed to load holds nothing
    }
  }

  private async doLoad(): Promise<EmbeddedModel> {
    const dir = this.modelPath;
    const hint = this.options.hint ?? DEFAULT_HINT;
    const { required } = modelFiles(this.options.dtype);
    if (!(await isDirectory(dir))) {
      throw new PolicyError("model-missing", `Embedded model folder ${dir} does not exist; ${hint}.`);
    }
    for (const file of required) {
      if (!(await isFile(path.join(dir, ...file.split("/"))))) {
        throw new PolicyError("model-missing", `Embedded model folder ${dir} has no ${file}; ${hint}.`);
      }
    }
    const declared = await declaredExternalData(dir, this.options.dtype);
    for (const file of declared) {
      if (!(await isFile(path.join(dir, ...file.split("/"))))) {
        throw new PolicyError(
          "model-missing",
          `Embedded model folder ${dir} has no ${file} (its config.json declares ${declared.length} external weight files); ${hint}.`,
        );
      }
    }
    const lib = await loadLocalRuntime().catch((err: Error) => {
      throw new PolicyError("model-load", err.message, err.cause);
    });
    try {
      const tokenizer = await lib.AutoTokenizer.from_pretrained(dir, { local_files_only: true });
      const model = await lib.AutoModelForCausalLM.from_pretrained(dir, {
        local_files_only: true,
        dtype: (this.options.dtype || "fp32") as "fp32",
        device: "cpu",
        ...(this.options.threads ? { session_options: { intraOpNumThreads: this.options.threads } } : {}),
      });
      return { lib, tokenizer, model, eosIds: eosIdsOf(model, tokenizer) };
    } catch (err) {
      throw new PolicyError("model-load", `Cannot load the embedded model from ${dir}: ${firstLine(err)}`, err);
    }
  }

  private async acquire(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.queue;
    this.queue = previous.then(() => next);
    await previous;
    return release;
  }

  private async *generate(
    loaded: EmbeddedModel,
    request: GenerateRequest,
  ): AsyncGenerator<GenerateDelta, GenerateSummary> {
    const { lib, tokenizer, model, eosIds } = loaded;
    const { signal } = request;
    const maxTokens = Math.max(0, Math.floor(request.maxTokens));
    const prompt =
      (tokenizer.apply_chat_template(request.messages, { tokenize: false, add_generation_prompt: true }) as string) +
      request.assistantPrefix;
    const inputs = tokenizer(prompt, { add_special_tokens: false }) as { input_ids: Tensor; attention_mask: Tensor };
    const promptTokens = Number(inputs.input_ids.dims.at(-1) ?? 0);
    if (maxTokens === 0) return { finishReason: "length", completionTokens: 0, promptTokens };

    const text = new StopScanner(request.stop);
    const decoder = new IncrementalDecoder((ids) =>
      tokenizer.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }),
    );
    const queue: GenerateDelta[] = [];
    let pendingTokens = 0;
    let cancelled = false;
    let finished = false;
    let failure: unknown;
    let wake: (() => void) | undefined;
    const notify = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const push = (piece: string) => {
      if (!piece) return;
      queue.push({ text: piece, tokens: pendingTokens });
      pendingTokens = 0;
    };

    // A TextStreamer subclass (the type generate() declares) that does its own incremental decoding.
    const streamer = new (class extends lib.TextStreamer {
      private prompt = true;
      override put(value: bigint[][]): void {
        if (this.prompt) {
          this.prompt = false; // the first call carries the prompt ids
          return;
        }
        for (const id of value[0] ?? []) {
          pendingTokens++;
          if (!text.stopped) push(text.append(decoder.push(Number(id))));
        }
        notify();
      }
      override end(): void {
        notify();
      }
    })(tokenizer, { skip_prompt: true });
    const criteria = new (class extends lib.StoppingCriteria {
      override _call(inputIds: number[][]): boolean[] {
        const stop = text.stopped || cancelled || signal?.aborted === true;
        return inputIds.map(() => stop);
      }
    })();

    const onAbort = () => notify();
    signal?.addEventListener("abort", onAbort);
    const run = model
      .generate({
        ...inputs,
        max_new_tokens: maxTokens,
        do_sample: false,
        num_beams: 1,
        repetition_penalty: 1.0,
        no_repeat_ngram_size: 0,
        eos_token_id: eosIds,
        streamer,
        stopping_criteria: [criteria],
      })
      .catch((err: unknown) => {
        failure = err;
      })
      .finally(() => {
        finished = true;
        notify();
      });

    try {
      for (;;) {
        if (signal?.aborted) break;
        const next = queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (finished) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      await run;
      if (signal?.aborted) throw abortedError();
      if (failure !== undefined) {
        throw new PolicyError(
          "model-load",
          `The embedded model failed while generating: ${firstLine(failure)}`,
          failure,
        );
      }
      const completionTokens = decoder.count;
      if (!text.stopped) {
        push(text.append(decoder.flush()));
        push(text.finish());
        for (let piece = queue.shift(); piece; piece = queue.shift()) yield piece;
      }
      let finishReason: FinishReason;
      if (text.stopped) finishReason = "stop";
      else if (eosIds.includes(decoder.last ?? -1)) finishReason = "eos";
      else finishReason = "length";
      return {
        finishReason,
        ...(text.stopString !== undefined ? { stopString: text.stopString } : {}),
        completionTokens,
        promptTokens,
      };
    } finally {
      // Also reached when the caller stops iterating early: end the generation before the session is reused.
      cancelled = true;
      signal?.removeEventListener("abort", onAbort);
      await run;
    }
  }
}

/**
 * Turns token ids into text as they arrive, never emitting a character whose UTF-8 bytes are still incomplete
 * (byte-level tokens can split one character). Decodes a short window, not the whole sequence, per token.
 */
export class IncrementalDecoder {
  private readonly ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;

  constructor(private readonly decode: (ids: number[]) => string) {}

  get count(): number {
    return this.ids.length;
  }

  get last(): number | undefined {
    return this.ids.at(-1);
  }

  /** Adds one token; returns the text that became complete. */
  push(id: number): string {
    this.ids.push(id);
    const prefix =
      this.readOffset > this.prefixOffset ? this.decode(this.ids.slice(this.prefixOffset, this.readOffset)) : "";
    const full = this.decode(this.ids.slice(this.prefixOffset));
    if (full.length > prefix.length && !full.endsWith("\uFFFD")) {
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
      return full.slice(prefix.length);
    }
    return "";
  }

  /** Whatever is left at the end of generation, even if a character is incomplete. */
  flush(): string {
    if (this.readOffset >= this.ids.length) return "";
    const prefix =
      this.readOffset > this.prefixOffset ? this.decode(this.ids.slice(this.prefixOffset, this.readOffset)) : "";
    const full = this.decode(this.ids.slice(this.prefixOffset));
    this.prefixOffset = this.readOffset = this.ids.length;
    return full.length > prefix.length ? full.slice(prefix.length) : "";
  }
}

/**
 * Finds stop strings in streamed text. Text that could be the start of a stop string is held back until it is
 * known not to be one, so neither a stop string nor text after it is ever emitted.
 */
export class StopScanner {
  private text = "";
  private emitted = 0;
  private readonly stops: string[];
  private readonly longest: number;
  stopString: string | undefined;

  constructor(stops: string[]) {
    this.stops = stops.filter((s) => s.length > 0);
    this.longest = Math.max(0, ...this.stops.map((s) => s.length));
  }

  get stopped(): boolean {
    return this.stopString !== undefined;
  }

  /** Adds generated text; returns the part that is safe to emit now. */
  append(piece: string): string {
    if (this.stopped || !piece) return "";
    const before = this.text.length;
    this.text += piece;
    const from = Math.max(0, before - this.longest + 1);
    let at = -1;
    for (const stop of this.stops) {
      const i = this.text.indexOf(stop, from);
      if (i >= 0 && (at < 0 || i < at)) {
        at = i;
        this.stopString = stop;
      }
    }
    if (at >= 0) return this.take(at);
    return this.take(this.text.length - this.heldBack());
  }

  /** The rest of the text once generation ended without a stop string. */
  finish(): string {
    return this.stopped ? "" : this.take(this.text.length);
  }

  private take(end: number): string {
    if (end <= this.emitted) return "";
    const out = this.text.slice(this.emitted, end);
    this.emitted = end;
    return out;
  }

  /** Length of the longest tail of the text that is a proper prefix of a stop string. */
  private heldBack(): number {
    for (let k = Math.min(this.longest - 1, this.text.length); k > 0; k--) {
      const tail = this.text.slice(-k);
      if (this.stops.some((s) => s.length > k && s.startsWith(tail))) return k;
    }
    return 0;
  }
}

function eosIdsOf(model: PreTrainedModel, tokenizer: PreTrainedTokenizer): number[] {
  const fromConfig = (model.generation_config as { eos_token_id?: number | number[] | null } | null)?.eos_token_id;
  const ids = Array.isArray(fromConfig) ? fromConfig : typeof fromConfig === "number" ? [fromConfig] : [];
  if (ids.length > 0) return ids;
  const eos = (tokenizer as { eos_token_id?: number | null }).eos_token_id;
  return typeof eos === "number" ? [eos] : [];
}

function abortedError(): PolicyError {
  return new PolicyError("aborted", "Generation was cancelled.");
}
