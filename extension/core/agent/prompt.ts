import prompts from "../../../protocol/prompts.json";
import type { ChatMessage } from "../policy/types";
import type { SearchHit } from "../retrieval/types";
import type { PromptStyle, RetrievalMode } from "./types";

/** Where the tags and templates come from: protocol/prompts.json, shared with the trainer. */
export const PROTOCOL = prompts;

/** English name of a language code, as the templates expect ("zh" → "Chinese"); unknown codes pass through. */
export function languageName(code: string): string {
  const names: Record<string, string> = prompts.languages;
  return names[code] ?? names[code.split("-")[0] ?? code] ?? code;
}

/** Single-pass placeholder substitution, so text that itself contains "{tgt_lang}" is left alone. */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{([a-z_]+)\}/g, (whole, key: string) => values[key] ?? whole);
}

export interface PromptInput {
  text: string;
  sourceLang: string;
  targetLang: string;
  context?: string;
  mode: RetrievalMode;
  style: PromptStyle;
  /** The formatted evidence for mode "always". */
  information?: string;
}

export function buildMessages(input: PromptInput): ChatMessage[] {
  const template = prompts.styles[input.style][input.mode];
  const contextBlock = input.context?.trim() ? fillTemplate(prompts.context_block, { context: input.context }) : "";
  const content = fillTemplate(template, {
    src_lang: languageName(input.sourceLang),
    tgt_lang: languageName(input.targetLang),
    context_block: contextBlock,
    src_text: input.text,
    information: input.information ?? "",
  });
  return [{ role: "user", content }];
}

/** One `[n] headword — gloss (source, lang)` line per hit, each capped at the protocol's character limit. */
export function formatEvidence(hits: readonly SearchHit[]): string {
  const spec = prompts.information;
  if (hits.length === 0) return spec.no_results;
  return hits
    .map((hit, i) => {
      const line = fillTemplate(spec.result_line, {
        n: String(i + 1),
        headword: oneLine(hit.headword),
        gloss: oneLine(hit.gloss),
        source: hit.source,
        lang: hit.lang,
      });
      return line.length > spec.max_chars_per_result ? `${line.slice(0, spec.max_chars_per_result - 1)}…` : line;
    })
    .join("\n");
}

/** The exact text the runtime appends after a search: the trainer masks these characters out of the loss. */
export function informationBlock(body: string): string {
  return `${prompts.information.before}${body}${prompts.information.after}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Stop strings for a style: the end of a search and the end of the translation. */
export function stopStrings(style: PromptStyle, mode: RetrievalMode): string[] {
  const end = style === "srat" ? "</answer>" : "</translation>";
  if (mode === "never") return [end];
  return [style === "srat" ? "</tool_call>" : "</search>", end];
}
