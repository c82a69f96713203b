import { createHash } from "node:crypto";
import path from "node:path";
import type { PreTrainedModel, PreTrainedTokenizer, Tensor } from "@huggingface/transformers";
import { firstLine, isDirectory, isFile, loadLocalRuntime } from "../../modelRuntime";

/** How a sentence encoder turns a model folder into vectors; every field that changes the vectors is in its id. */
export interface SentenceEncoderOptions {
  /** Local model folder: config.json, tokenizer.json, tokenizer_config.json, onnx/model[_quantized].onnx. */
  modelPath: string;
  /** Prepended to queries: E5 wants "query: ", BGE an instruction such as "Represent this sentence for searching relevant passages: ". */
  queryPrefix?: string;
  /** Prepended to passages: E5 wants "passage: ". */
  passagePrefix?: string;
  /** Mean over the attention mask (sentence-transformers, E5) or the first token (BGE). Default mean. */
  pooling?: "mean" | "cls";
  /** Unit-length vectors, so that inner product is cosine. Default true. */
  normalize?: boolean;
  /** fp32 loads onnx/model.onnx, q8 onnx/model_quantized.onnx. Default fp32. */
  dtype?: "fp32" | "q8";
  /** Longer inputs are truncated to this many tokens. Default 256. */
  maxLength?: number;
  /** Texts per forward pass. Default 32. */
  batchSize?: number;
  /** ONNX Runtime intra-op threads; the runtime's default when omitted. */
  threads?: number;
}

/** Anything that turns texts into vectors: the build and the dense retriever need only this. */
export interface TextEncoder {
  /** Names the model and every option that changes the vectors; recorded in index manifests. */
  readonly id: string;
  encodeQueries(texts: string[]): Promise<Float32Array[]>;
  encodePassages(texts: string[]): Promise<Float32Array[]>;
  dimension(): Promise<number>;
}

export type EncoderErrorCode = "encoder-missing" | "encoder-load" | "encoder-run";

/** A model folder that is missing, incomplete or unloadable; the message names the path and the setting to fix. */
export class EncoderError extends Error {
  override readonly name = "EncoderError";
  constructor(
    readonly code: EncoderErrorCode,
    message: string,
    readonly path: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

const FIX_HINT =
  "set glossa.retrieval.encoderPath to a local ONNX sentence-encoder folder (e.g. multilingual-e5-small exported for transformers.js)";

interface LoadedEncoder {
  tokenizer: PreTrainedTokenizer;
  model: PreTrainedModel;
  /** `maxLength`, lowered to what the model's position embeddings allow. */
  maxLength: number;
  /** The special token that closes every input ([SEP], </s>), when the tokenizer adds one. */
  endId: bigint | undefined;
}

/**
 * A sentence encoder run in-process with @huggingface/transformers on onnxruntime-node, from a local
 * folder only. The runtime is imported on first use, never when the extension activates.
 *
 * Pointing it at a real multilingual encoder: export (or download) the model in the transformers.js layout
 * (config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx and optionally onnx/model_quantized.onnx),
 * e.g. intfloat/multilingual-e5-small, and use
 *   { modelPath: "/models/multilingual-e5-small", queryPrefix: "query: ", passagePrefix: "passage: ", pooling: "mean" }
 * For BGE models: pooling "cls" and queryPrefix "Represent this sentence for searching relevant passages: ".
 * sentence-transformers models such as all-MiniLM-L6-v2 take mean pooling and no prefixes (bench/export_minilm.py).
 */
export class SentenceEncoder implements TextEncoder {
  readonly id: string;
  readonly modelPath: string;
  private readonly pooling: "mean" | "cls";
  private readonly normalize: boolean;
  private readonly dtype: "fp32" | "q8";
  private readonly maxLength: number;
  private readonly batchSize: number;
  private loading: Promise<LoadedEncoder> | undefined;
  /** Forward passes share one session; they run one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: SentenceEncoderOptions) {
    this.modelPath = path.resolve(options.modelPath);
    this.pooling = options.pooling ?? "mean";
    this.normalize = options.normalize ?? true;
    this.dtype = options.dtype ?? "fp32";
    this.maxLength = options.maxLength ?? 256;
    this.batchSize = Math.max(1, options.batchSize ?? 32);
    const vectorsDependOn = {
      queryPrefix: options.queryPrefix ?? "",
      passagePrefix: options.passagePrefix ?? "",
      pooling: this.pooling,
      normalize: this.normalize,
      dtype: this.dtype,
      maxLength: this.maxLength,
    };
    const hash = createHash("sha256").update(JSON.stringify(vectorsDependOn)).digest("hex").slice(0, 12);
    this.id = `${path.basename(this.modelPath)}@${hash}`;
  }

  encodeQueries(texts: string[]): Promise<Float32Array[]> {
    return this.encode(texts, this.options.queryPrefix ?? "");
  }

  encodePassages(texts: string[]): Promise<Float32Array[]> {
    return this.encode(texts, this.options.passagePrefix ?? "");
  }

  async dimension(): Promise<number> {
    const { model } = await this.load();
    const hidden = (model.config as unknown as { hidden_size?: unknown }).hidden_size;
    if (typeof hidden === "number") return hidden;
    const [probe] = await this.encodePassages(["dimension"]);
    return probe?.length ?? 0;
  }

  /** Loads the tokenizer and model now (otherwise on the first encode). */
  async load(): Promise<LoadedEncoder> {
    if (!this.loading) {
      this.loading = this.doLoad();
      this.loading.catch(() => {
        this.loading = undefined; // a later call retries, e.g. after the folder was fixed
      });
    }
    return this.loading;
  }

  async dispose(): Promise<void> {
    const loading = this.loading;
    this.loading = undefined;
    if (!loading) return;
    await this.queue.catch(() => undefined);
    try {
      await (await loading).model.dispose();
    } catch {
      // a model that failed to load holds nothing
    }
  }

  private async encode(texts: string[], prefix: string): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const loaded = await this.load();
    // Batches of similar length waste little on padding: encode in length order, return in input order.
    const order = texts.map((_, i) => i).sort((a, b) => (texts[a] as string).length - (texts[b] as string).length);
    const out = new Array<Float32Array>(texts.length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      const slots = order.slice(start, start + this.batchSize);
      const batch = slots.map((i) => prefix + texts[i]);
      const rows = await this.serialize(() => this.forward(loaded, batch));
      slots.forEach((slot, j) => {
        out[slot] = rows[j] as Float32Array;
      });
    }
    return out;
  }

  private serialize<T>(run: () => Promise<T>): Promise<T> {
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private async forward(
    { tokenizer, model, maxLength, endId }: LoadedEncoder,
    texts: string[],
  ): Promise<Float32Array[]> {
    let hidden: Tensor;
    let mask: Tensor;
    try {
      const inputs = tokenizer(texts, { padding: true, truncation: true, max_length: maxLength }) as Record<
        string,
        Tensor
      >;
      mask = inputs.attention_mask as Tensor;
      if (endId !== undefined) closeTruncatedRows(inputs.input_ids as Tensor, mask, endId);
      const outputs = (await model(inputs)) as Record<string, Tensor | undefined>;
      const state = outputs.last_hidden_state ?? outputs.token_embeddings ?? outputs.logits;
      if (!state)
        throw new Error(`the model returned no last_hidden_state (outputs: ${Object.keys(outputs).join(", ")})`);
      hidden = state;
    } catch (err) {
      throw new EncoderError(
        "encoder-run",
        `Encoding failed with ${this.modelPath}: ${firstLine(err)}`,
        this.modelPath,
        err,
      );
    }
    const [batch, seq, dim] = hidden.dims as [number, number, number];
    const data = hidden.data as Float32Array;
    const maskData = mask.data as BigInt64Array;
    const rows: Float32Array[] = [];
    for (let b = 0; b < batch; b++) {
      const row = new Float32Array(dim);
      if (this.pooling === "cls") {
        row.set(data.subarray(b * seq * dim, b * seq * dim + dim));
      } else {
        let tokens = 0;
        for (let t = 0; t < seq; t++) {
          if (maskData[b * seq + t] === 0n) continue;
          tokens++;
          const base = (b * seq + t) * dim;
          for (let d = 0; d < dim; d++) row[d] = (row[d] as number) + (data[base + d] as number);
        }
        if (tokens > 0) for (let d = 0; d < dim; d++) row[d] = (row[d] as number) / tokens;
      }
      if (this.normalize) normalizeInPlace(row);
      rows.push(row);
    }
    return rows;
  }

  private async doLoad(): Promise<LoadedEncoder> {
    const dir = this.modelPath;
    const weights = this.dtype === "q8" ? "onnx/model_quantized.onnx" : "onnx/model.onnx";
    if (!(await isDirectory(dir))) {
      throw new EncoderError("encoder-missing", `Sentence-encoder folder ${dir} does not exist; ${FIX_HINT}.`, dir);
    }
    for (const file of ["config.json", "tokenizer.json", "tokenizer_config.json", weights]) {
      const full = path.join(dir, ...file.split("/"));
      if (!(await isFile(full))) {
        const dtypeHint =
          file === weights ? ` (dtype ${this.dtype}; glossa.retrieval.encoderDtype chooses the file)` : "";
        throw new EncoderError(
          "encoder-missing",
          `Sentence-encoder folder ${dir} has no ${file}${dtypeHint}; ${FIX_HINT}.`,
          full,
        );
      }
    }
    const lib = await loadLocalRuntime().catch((err: Error) => {
      throw new EncoderError("encoder-load", err.message, dir, err.cause);
    });
    try {
      const tokenizer = await lib.AutoTokenizer.from_pretrained(dir, { local_files_only: true });
      const model = await lib.AutoModel.from_pretrained(dir, {
        local_files_only: true,
        dtype: this.dtype,
        device: "cpu",
        ...(this.options.threads
          ? { session_options: { intraOpNumThreads: this.options.threads, interOpNumThreads: 1 } }
          : {}),
      });
      const positions = (model.config as unknown as { max_position_embeddings?: unknown }).max_position_embeddings;
      const maxLength = typeof positions === "number" ? Math.min(this.maxLength, positions) : this.maxLength;
      const empty = (tokenizer("") as Record<string, Tensor>).input_ids?.data as BigInt64Array | undefined;
      const endId = empty && empty.length >= 2 ? empty[empty.length - 1] : undefined;
      return { tokenizer, model, maxLength, endId };
    } catch (err) {
      throw new EncoderError(
        "encoder-load",
        `Cannot load the sentence encoder from ${dir}: ${firstLine(err)}`,
        dir,
        err,
      );
    }
  }
}

/**
 * @huggingface/transformers 4.3 truncates after adding the special tokens, so a truncated input loses its
 * closing [SEP] (or </s>), unlike the Python tokenizers the model was trained with. Put it back in the last
 * position of every full-length row (a row that fills it exactly already ends with it).
 */
function closeTruncatedRows(ids: Tensor, mask: Tensor, endId: bigint): void {
  const [batch, seq] = ids.dims as [number, number];
  const idData = ids.data as BigInt64Array;
  const maskData = mask.data as BigInt64Array;
  for (let b = 0; b < batch; b++) {
    const last = b * seq + seq - 1;
    if (maskData[last] !== 0n) idData[last] = endId;
  }
}

function normalizeInPlace(row: Float32Array): void {
  let norm = 0;
  for (const v of row) norm += v * v;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let d = 0; d < row.length; d++) row[d] = (row[d] as number) / norm;
}
