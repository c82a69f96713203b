/**
 * The translation panel. It renders a run as it streams (reasoning, searches with their evidence,
 * the translation) and sends the translator's decision back to the extension host.
 *
 * Everything the model or a dictionary produced is untrusted text: it is only ever written with
 * textContent, Text nodes or a form control's value, never parsed as HTML.
 */
import "@vscode-elements/elements/dist/vscode-badge/index.js";
import "@vscode-elements/elements/dist/vscode-button/index.js";
import "@vscode-elements/elements/dist/vscode-collapsible/index.js";
import "@vscode-elements/elements/dist/vscode-progress-ring/index.js";
import "@vscode-elements/elements/dist/vscode-textarea/index.js";
import type { VscodeButton } from "@vscode-elements/elements/dist/vscode-button/vscode-button.js";
import type { VscodeCollapsible } from "@vscode-elements/elements/dist/vscode-collapsible/vscode-collapsible.js";
import type { VscodeTextarea } from "@vscode-elements/elements/dist/vscode-textarea/vscode-textarea.js";
import type { AgentEvent, Trajectory } from "../extension/core/agent/types";
import type { SearchHit } from "../extension/core/retrieval/types";
import {
  type DecisionKind,
  type DecisionResultMessage,
  type HostMessage,
  MAX_COMMENT_LENGTH,
  MAX_LOG_LENGTH,
  parseHostMessage,
  type RunStartMessage,
  type WebviewMessage,
} from "./protocol";

interface VsCodeApi {
  postMessage(message: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscodeApi = acquireVsCodeApi();

function send(message: WebviewMessage): void {
  vscodeApi.postMessage(message);
}

// ---------------------------------------------------------------------------------------------
// DOM helpers (text only)

type Attrs = Record<string, string | number | boolean | undefined>;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children);
  return node;
}

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`missing #${id}`);
  return node as T;
}

function setText(node: Element, text: string): void {
  node.textContent = text;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function formatScore(score: number): string {
  return Math.abs(score) >= 10 ? score.toFixed(2) : score.toFixed(3);
}

/** Rough number of rows a text needs at a given width; CJK characters count double. */
function rowsFor(text: string, widthPx: number, min: number, max: number): number {
  const perLine = Math.max(20, Math.floor((widthPx - 24) / 7.5));
  let rows = 0;
  for (const line of text.split("\n")) {
    let width = 0;
    for (const ch of line)
      width += /[\u1100-\u11ff\u2e80-\ua4cf\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]/.test(ch) ? 2 : 1;
    rows += Math.max(1, Math.ceil(width / perLine));
  }
  return Math.min(max, Math.max(min, rows));
}

// ---------------------------------------------------------------------------------------------
// static layout

const RATING_LABELS = ["unusable", "poor", "acceptable", "good", "excellent"];

function buildLayout(root: HTMLElement): void {
  const ratingButtons = RATING_LABELS.map((label, i) =>
    el(
      "button",
      {
        type: "button",
        class: "rating-button",
        "data-rating": i + 1,
        "aria-pressed": "false",
        title: `${i + 1} — ${label}`,
        "aria-label": `${i + 1} of 5, ${label}`,
      },
      String(i + 1),
    ),
  );

  root.replaceChildren(
    el(
      "header",
      { class: "run-header" },
      el(
        "div",
        { class: "title-row" },
        el("span", { id: "lang-pair", class: "lang-pair", title: "Language pair" }, "Glossa"),
        el("vscode-badge", { id: "mode", title: "Retrieval mode", hidden: true }),
        el("span", { id: "policy", class: "policy", title: "Policy" }),
      ),
      el(
        "div",
        { class: "status-row" },
        el("vscode-progress-ring", { id: "spinner", class: "spinner", hidden: true, "aria-label": "Running" }),
        el("span", { id: "status", role: "status", "aria-live": "polite" }, "Waiting for a translation run…"),
        el("vscode-button", { id: "btn-cancel", secondary: true, hidden: true, title: "Stop this run" }, "Cancel"),
      ),
    ),
    el(
      "section",
      { class: "block source-block", "aria-labelledby": "source-heading" },
      el("h2", { id: "source-heading" }, "Source"),
      el("div", { id: "source", class: "source-text" }),
    ),
    el(
      "section",
      { class: "block steps-block", "aria-labelledby": "steps-heading" },
      el("h2", { id: "steps-heading" }, "Steps"),
      el("ol", { id: "steps", class: "steps", "aria-live": "off" }),
      el("p", { id: "steps-empty", class: "muted" }, "Nothing yet."),
      el("vscode-collapsible", { id: "raw", heading: "Raw model output", hidden: true }, el("pre", { id: "raw-text" })),
    ),
    el(
      "section",
      { class: "block translation-block", "aria-labelledby": "translation-heading" },
      el("h2", { id: "translation-heading" }, "Translation"),
      el("vscode-textarea", {
        id: "translation",
        readonly: true,
        resize: "vertical",
        rows: 4,
        placeholder: "The translation appears here.",
        "aria-labelledby": "translation-heading",
      }),
      el(
        "div",
        { id: "error", class: "error-box", role: "alert", hidden: true },
        el(
          "div",
          { class: "error-head" },
          el("code", { id: "error-code", class: "error-code" }),
          el("span", { id: "error-message", class: "error-message" }),
        ),
        el(
          "vscode-collapsible",
          { id: "error-raw", heading: "Raw model output" },
          el("pre", { id: "error-raw-text", class: "raw" }),
        ),
      ),
      el(
        "div",
        { class: "actions", role: "group", "aria-label": "Decision" },
        el("vscode-button", { id: "btn-accept", disabled: true, title: "Accept (Ctrl+Enter)" }, "Accept"),
        el("vscode-button", { id: "btn-edit", secondary: true, disabled: true }, "Edit"),
        el("vscode-button", { id: "btn-reject", secondary: true, disabled: true }, "Reject"),
        el("span", { class: "hint muted" }, "Ctrl+Enter accepts"),
      ),
      el("p", { id: "decision-message", class: "result", role: "status", "aria-live": "polite", hidden: true }),
    ),
    el(
      "section",
      { class: "block rating-block", "aria-labelledby": "rating-heading" },
      el("h2", { id: "rating-heading" }, "Rate this translation"),
      el(
        "div",
        { id: "rating", class: "rating", role: "group", "aria-labelledby": "rating-heading" },
        ...ratingButtons,
      ),
      el("vscode-textarea", {
        id: "rating-comment",
        rows: 2,
        resize: "vertical",
        maxlength: MAX_COMMENT_LENGTH,
        placeholder: "Optional comment (what was wrong, what you changed)",
        "aria-label": "Rating comment",
      }),
      el(
        "div",
        { class: "rating-actions" },
        el("vscode-button", { id: "btn-rate", secondary: true, disabled: true }, "Send rating"),
        el("span", { id: "rating-count", class: "muted" }, `0 / ${MAX_COMMENT_LENGTH}`),
      ),
      el("p", { id: "rating-message", class: "result", role: "status", "aria-live": "polite", hidden: true }),
    ),
  );
  root.removeAttribute("aria-busy");
}

// ---------------------------------------------------------------------------------------------
// run state

interface ThinkStep {
  kind: "think";
  item: HTMLLIElement;
  box: VscodeCollapsible;
  /** The scrolling container of the reasoning text. */
  view: HTMLElement;
  text: Text;
  userToggled: boolean;
}

interface SearchStep {
  kind: "search";
  item: HTMLLIElement;
  meta: HTMLElement;
  body: HTMLElement;
  done: boolean;
}

interface TextStep {
  kind: "text";
  item: HTMLLIElement;
  text: Text;
}

interface OtherStep {
  kind: "turn" | "warning" | "translate";
  item: HTMLLIElement;
}

type StepView = ThinkStep | SearchStep | TextStep | OtherStep;

interface Run {
  info: RunStartMessage;
  phase: "running" | "done" | "error";
  /** The translation as the model wrote it (what Accept sends, and what "Discard edit" restores). */
  modelTranslation: string;
  editing: boolean;
  /** The decision sent and not yet answered. */
  pending: DecisionKind | null;
  cancelRequested: boolean;
  decided: boolean;
  rated: boolean;
  rating: number | null;
  turns: number;
  last: StepView | null;
  searches: Map<number, SearchStep>;
  activity: string;
}

let run: Run | null = null;

const ui = {
  get status() {
    return byId<HTMLElement>("status");
  },
  get steps() {
    return byId<HTMLOListElement>("steps");
  },
  get translation() {
    return byId<VscodeTextarea>("translation");
  },
  get accept() {
    return byId<VscodeButton>("btn-accept");
  },
  get edit() {
    return byId<VscodeButton>("btn-edit");
  },
  get reject() {
    return byId<VscodeButton>("btn-reject");
  },
  get rate() {
    return byId<VscodeButton>("btn-rate");
  },
  get cancel() {
    return byId<VscodeButton>("btn-cancel");
  },
  get comment() {
    return byId<VscodeTextarea>("rating-comment");
  },
  ratingButtons(): HTMLButtonElement[] {
    return Array.from(byId("rating").querySelectorAll<HTMLButtonElement>("button[data-rating]"));
  },
};

function setStatus(text: string): void {
  setText(ui.status, text);
}

function startRun(info: RunStartMessage): void {
  run = {
    info,
    phase: "running",
    modelTranslation: "",
    editing: false,
    pending: null,
    cancelRequested: false,
    decided: false,
    rated: false,
    rating: null,
    turns: 0,
    last: null,
    searches: new Map(),
    activity: "Starting…",
  };
  setText(byId("lang-pair"), `${info.sourceLang} → ${info.targetLang}`);
  const mode = byId("mode");
  setText(mode, info.mode);
  mode.hidden = false;
  const policy = byId("policy");
  setText(policy, info.policyId);
  policy.title = `Policy: ${info.policyId}`;
  const source = byId("source");
  setText(source, info.source);
  source.lang = info.sourceLang;
  ui.steps.replaceChildren();
  byId("steps-empty").hidden = false;
  byId("raw").hidden = true;
  setText(byId("raw-text"), "");
  byId("error").hidden = true;
  const translation = ui.translation;
  translation.value = "";
  translation.placeholder = "The translation appears here.";
  translation.lang = info.targetLang;
  translation.setAttribute("rows", "4");
  for (const id of ["decision-message", "rating-message"]) {
    const p = byId(id);
    p.hidden = true;
    setText(p, "");
  }
  ui.comment.value = "";
  updateCommentCount();
  setStatus(run.activity);
  refreshControls();
}

function addStep(step: StepView): void {
  const current = run;
  if (!current) return;
  const previous = current.last;
  // A finished reasoning block folds away once the policy moves on, unless the translator opened or closed it.
  if (previous && previous.kind === "think" && step.kind !== "think" && !previous.userToggled) {
    previous.box.open = false;
  }
  if (previous && previous.kind === "think") previous.box.description = describeThink(previous.text.data);
  current.last = step;
  ui.steps.append(step.item);
  byId("steps-empty").hidden = true;
}

function describeThink(text: string): string {
  return plural(Array.from(text).length, "character");
}

function appendTo(text: Text, delta: string): void {
  // Leading whitespace after an opening tag carries nothing; keep everything after it.
  text.appendData(text.length === 0 ? delta.replace(/^\s+/, "") : delta);
}

function onThinkDelta(current: Run, delta: string): void {
  let step = current.last;
  if (step?.kind !== "think") {
    if (delta.trim() === "") return;
    const text = document.createTextNode("");
    const box = el("vscode-collapsible", {
      heading: "Reasoning",
      description: "thinking…",
      open: true,
    }) as VscodeCollapsible;
    const view = el("div", { class: "think-text" }, text);
    box.append(view);
    const think: ThinkStep = {
      kind: "think",
      item: el("li", { class: "step step-think" }, box),
      box,
      view,
      text,
      userToggled: false,
    };
    box.addEventListener("vsc-collapsible-toggle", () => {
      think.userToggled = true;
    });
    addStep(think);
    step = think;
  }
  // Follow the stream unless the translator scrolled up to read.
  const view = step.view;
  const following = view.scrollTop + view.clientHeight >= view.scrollHeight - 4;
  appendTo(step.text, delta);
  if (following) view.scrollTop = view.scrollHeight;
  current.activity = "Thinking…";
}

function onTextDelta(current: Run, delta: string): void {
  let step = current.last;
  if (step?.kind !== "text") {
    if (delta.trim() === "") return;
    const text = document.createTextNode("");
    step = { kind: "text", item: el("li", { class: "step step-text", title: "Text outside any tag" }, text), text };
    addStep(step);
  }
  appendTo(step.text, delta);
}

function searchStep(current: Run, query: string, index: number): SearchStep {
  const existing = current.searches.get(index);
  if (existing) return existing;
  const meta = el("span", { class: "search-meta muted" }, "searching…");
  const body = el("div", { class: "search-body" });
  const item = el(
    "li",
    { class: "step step-search", "data-index": index },
    el(
      "div",
      { class: "search-head" },
      el("span", { class: "step-label" }, "Search"),
      el("q", { class: "query" }, query),
      meta,
    ),
    body,
  );
  const step: SearchStep = { kind: "search", item, meta, body, done: false };
  current.searches.set(index, step);
  addStep(step);
  return step;
}

/** Entry tags (idiom, slang, neologism…) shown beside a headword; the rest are in the raw evidence. */
const MAX_TAGS_SHOWN = 4;

function evidenceTable(hits: SearchHit[]): HTMLTableElement {
  const showTier = hits.some((h) => h.tier !== undefined);
  const headers = ["Headword", "Gloss", "Source", "Match", "Score", ...(showTier ? ["Tier"] : [])];
  const head = el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { scope: "col" }, h))));
  const rows = hits.map((hit) =>
    el(
      "tr",
      { class: "evidence-row", title: hit.id },
      el(
        "td",
        { class: "headword" },
        el("span", { lang: hit.lang || undefined }, hit.headword),
        ...(hit.tags ?? []).slice(0, MAX_TAGS_SHOWN).map((t) => el("span", { class: "tag" }, t)),
      ),
      el("td", { class: "gloss" }, hit.gloss),
      el(
        "td",
        { class: "corpus" },
        hit.source,
        ...(hit.online ? [el("span", { class: "online", title: "Found by the online search tier" }, "online")] : []),
      ),
      matchCell(hit),
      el("td", { class: "score num" }, formatScore(hit.score)),
      ...(showTier ? [el("td", { class: "tier num" }, hit.tier === undefined ? "" : String(hit.tier))] : []),
    ),
  );
  return el("table", { class: "evidence" }, head, el("tbody", {}, ...rows));
}

/**
 * Why a result matched. A fused (hybrid) result names every engine that found it, best first as they
 * ranked it ("exact + dense"), with each engine's own score and rank on hover.
 */
function matchCell(hit: SearchHit): HTMLElement {
  const reasons = hit.reasons ?? [];
  if (reasons.length === 0) return el("td", { class: `match match-${hit.match}` }, hit.match);
  const detail = reasons
    .map((r) => `${r.kind}: score ${formatScore(r.score)}${r.rank === undefined ? "" : `, rank ${r.rank}`}`)
    .join("\n");
  return el("td", { class: `match match-${hit.match}`, title: detail }, reasons.map((r) => r.kind).join(" + "));
}

function onEvidence(current: Run, event: Extract<AgentEvent, { type: "evidence" }>): void {
  const step = searchStep(current, event.query, event.index);
  step.done = true;
  setText(step.meta, `${plural(event.hits.length, "hit")} · ${formatMs(event.elapsedMs)}`);
  const parts: Node[] = [
    event.hits.length > 0 ? evidenceTable(event.hits) : el("p", { class: "muted no-hits" }, "No entries found."),
  ];
  if (event.information.trim() !== "") {
    parts.push(
      el(
        "vscode-collapsible",
        { class: "information", heading: "Evidence as the model saw it" },
        el("pre", { class: "raw" }, event.information),
      ),
    );
  }
  step.body.replaceChildren(...parts);
  current.activity = "Reading the evidence…";
}

function onTranslationDelta(current: Run, delta: string): void {
  if (current.last?.kind !== "translate") {
    addStep({ kind: "translate", item: el("li", { class: "step step-translate muted" }, "Writing the translation") });
  }
  current.modelTranslation += delta;
  showTranslation(current.modelTranslation.replace(/^\s+/, ""));
  current.activity = "Translating…";
}

function showTranslation(text: string): void {
  const t = ui.translation;
  t.value = text;
  t.setAttribute("rows", String(rowsFor(text, t.clientWidth || 480, 4, 18)));
}

function finish(current: Run, trajectory: Trajectory): void {
  if (current.last?.kind === "think") {
    current.last.box.description = describeThink(current.last.text.data);
    if (!current.last.userToggled) current.last.box.open = false;
  }
  if (trajectory.translation !== null) current.modelTranslation = trajectory.translation;
  current.modelTranslation = current.modelTranslation.trim();
  showTranslation(current.modelTranslation);
  for (const marker of document.querySelectorAll(".step-translate")) marker.textContent = "Translation written";
  for (const step of current.searches.values()) {
    if (!step.done) setText(step.meta, "no result");
  }
}

function onAgentEvent(event: AgentEvent): void {
  const current = run;
  if (!current) return;
  switch (event.type) {
    case "turn-start":
      current.turns += 1;
      if (current.turns > 1) {
        addStep({ kind: "turn", item: el("li", { class: "step step-turn" }, `Turn ${current.turns}`) });
      }
      break;
    case "think-delta":
      onThinkDelta(current, event.text);
      break;
    case "text-delta":
      onTextDelta(current, event.text);
      break;
    case "search":
      searchStep(current, event.query, event.index);
      current.activity = `Searching for “${event.query}”…`;
      break;
    case "evidence":
      onEvidence(current, event);
      break;
    case "translation-delta":
      onTranslationDelta(current, event.text);
      break;
    case "warning":
      addStep({
        kind: "warning",
        item: el(
          "li",
          { class: "step step-warning", role: "note" },
          el("span", { class: "step-label" }, "Warning"),
          el("code", { class: "warning-code" }, event.code),
          el("span", {}, event.message),
        ),
      });
      break;
    case "done": {
      const t = event.trajectory;
      current.phase = "done";
      finish(current, t);
      const raw = byId("raw");
      setText(byId("raw-text"), t.raw);
      raw.hidden = t.raw === "";
      current.activity = [
        "Done",
        formatMs(t.timings.totalMs),
        plural(t.searches, "search"),
        plural(t.turns, "turn"),
        plural(t.completionTokens, "token"),
      ].join(" · ");
      if (current.modelTranslation === "") current.activity += " · no translation";
      break;
    }
    case "error": {
      current.phase = "error";
      finish(current, event.trajectory);
      setText(byId("error-code"), event.code);
      setText(byId("error-message"), event.message);
      setText(byId("error-raw-text"), event.trajectory.raw);
      byId("error-raw").hidden = event.trajectory.raw === "";
      byId("error").hidden = false;
      if (current.modelTranslation === "") ui.translation.placeholder = "No translation. Use Edit to write your own.";
      current.activity = event.code === "cancelled" ? "Cancelled" : `Stopped: ${event.code}`;
      break;
    }
  }
  setStatus(current.activity);
  refreshControls();
}

// ---------------------------------------------------------------------------------------------
// decisions

function showResult(id: string, text: string, ok: boolean | null): void {
  const p = byId(id);
  setText(p, text);
  p.hidden = false;
  p.classList.toggle("ok", ok === true);
  p.classList.toggle("failed", ok === false);
}

function refreshControls(): void {
  const current = run;
  const finished = current !== null && current.phase !== "running";
  const open = current !== null && finished && !current.decided && current.pending === null;
  const hasText = ui.translation.value.trim() !== "";
  ui.accept.disabled = !(open && hasText);
  ui.edit.disabled = !open;
  ui.reject.disabled = !open;
  setText(ui.accept, current?.editing ? "Accept edit" : "Accept");
  setText(ui.edit, current?.editing ? "Discard edit" : "Edit");
  ui.accept.title = current?.editing ? "Accept your edit (Ctrl+Enter)" : "Accept the translation (Ctrl+Enter)";
  ui.translation.readonly = !current?.editing;

  const canRate = current !== null && finished && !current.rated && current.pending === null;
  for (const b of ui.ratingButtons()) {
    b.disabled = !canRate;
    const selected = current?.rating === Number(b.dataset.rating);
    b.setAttribute("aria-pressed", String(selected));
  }
  ui.comment.disabled = !canRate;
  ui.rate.disabled = !(canRate && current?.rating !== null);

  const running = current !== null && current.phase === "running";
  ui.cancel.hidden = !running;
  ui.cancel.disabled = !running || current.cancelRequested;
  byId("spinner").hidden = !running;
}

function decide(kind: DecisionKind): void {
  const current = run;
  if (!current || current.phase === "running" || current.pending !== null) return;
  const runId = current.info.runId;
  if (kind === "rate") {
    if (current.rated || current.rating === null) return;
    current.pending = "rate";
    send({ type: "rate", runId, rating: current.rating, comment: ui.comment.value.slice(0, MAX_COMMENT_LENGTH) });
    showResult("rating-message", "Sending rating…", null);
  } else {
    if (current.decided) return;
    if (kind === "reject") {
      send({ type: "reject", runId });
    } else {
      const text = ui.translation.value;
      if (text.trim() === "") return;
      send(kind === "edit" ? { type: "edit-accept", runId, text } : { type: "accept", runId, text });
    }
    current.pending = kind;
    showResult("decision-message", "Saving…", null);
  }
  refreshControls();
}

function onDecisionResult(message: DecisionResultMessage): void {
  const current = run;
  if (!current || message.runId !== current.info.runId) return;
  const kind = message.decision ?? current.pending ?? "accept";
  current.pending = null;
  if (message.ok) {
    if (kind === "rate") current.rated = true;
    else {
      current.decided = true;
      current.editing = false;
    }
  }
  showResult(kind === "rate" ? "rating-message" : "decision-message", message.message, message.ok);
  refreshControls();
}

function onAccept(): void {
  if (run?.editing) decide("edit");
  else decide("accept");
}

function onEdit(): void {
  const current = run;
  if (!current || ui.edit.disabled) return;
  current.editing = !current.editing;
  if (!current.editing) showTranslation(current.modelTranslation);
  refreshControls();
  if (current.editing) ui.translation.focus();
}

function onCancel(): void {
  const current = run;
  if (current?.phase !== "running" || current.cancelRequested) return;
  current.cancelRequested = true;
  send({ type: "cancel", runId: current.info.runId });
  setStatus("Cancelling…");
  refreshControls();
}

function updateCommentCount(): void {
  setText(byId("rating-count"), `${ui.comment.value.length} / ${MAX_COMMENT_LENGTH}`);
}

function wireControls(): void {
  const guarded = (button: VscodeButton, action: () => void) =>
    button.addEventListener("click", () => {
      if (!button.disabled) action();
    });
  guarded(ui.accept, onAccept);
  guarded(ui.edit, onEdit);
  guarded(ui.reject, () => decide("reject"));
  guarded(ui.rate, () => decide("rate"));
  guarded(ui.cancel, onCancel);
  for (const b of ui.ratingButtons()) {
    b.addEventListener("click", () => {
      if (!run || b.disabled) return;
      run.rating = Number(b.dataset.rating);
      refreshControls();
    });
  }
  ui.comment.addEventListener("input", updateCommentCount);
  ui.translation.addEventListener("input", () => refreshControls());
  // Ctrl+Enter (Cmd+Enter on macOS) accepts, or sends the rating from the comment box. It is caught
  // before it reaches the focused element, so a focused button never also treats it as a click.
  window.addEventListener(
    "keydown",
    (e) => {
      if (e.key !== "Enter" || !(e.ctrlKey || e.metaKey)) return;
      e.preventDefault();
      e.stopPropagation();
      if (e.composedPath().includes(ui.comment)) {
        if (!ui.rate.disabled) decide("rate");
      } else if (!ui.accept.disabled) {
        onAccept();
      }
    },
    { capture: true },
  );
}

// ---------------------------------------------------------------------------------------------
// messages

function report(reason: string): void {
  console.warn(`Glossa panel: ignored a message: ${reason}`);
  send({ type: "log", level: "warn", message: `ignored a host message: ${reason}`.slice(0, MAX_LOG_LENGTH) });
}

function onHostMessage(message: HostMessage): void {
  switch (message.type) {
    case "run-start":
      startRun(message);
      break;
    case "agent-event":
      if (run && message.runId === run.info.runId) onAgentEvent(message.event);
      break;
    case "decision-result":
      onDecisionResult(message);
      break;
  }
}

function main(): void {
  const root = document.getElementById("app") ?? document.body.appendChild(el("main", { id: "app" }));
  buildLayout(root);
  wireControls();
  refreshControls();
  window.addEventListener("message", (e: MessageEvent<unknown>) => {
    const message = parseHostMessage(e.data, report);
    if (!message) return;
    try {
      onHostMessage(message);
    } catch (err) {
      const text = err instanceof Error ? `${err.message}\n${err.stack ?? ""}` : String(err);
      console.error(err);
      send({
        type: "log",
        level: "error",
        message: `failed to render ${message.type}: ${text}`.slice(0, MAX_LOG_LENGTH),
      });
    }
  });
  send({ type: "ready" });
}

main();
