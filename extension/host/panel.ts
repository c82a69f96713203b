import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import {
  type AgentEventMessage,
  appendCoalesced,
  type DecisionKind,
  type DecisionResultMessage,
  type HostMessage,
  isDeltaEvent,
  parseWebviewMessage,
  type RunInfo,
  type WebviewMessage,
} from "../../webview/protocol";
import type { AgentEvent } from "../core/agent/types";

export type { RunInfo } from "../../webview/protocol";

/** What the translator decided about a run, as reported by the panel. */
export type PanelDecision =
  | { kind: "accept"; runId: string; text: string }
  | { kind: "edit"; runId: string; text: string }
  | { kind: "reject"; runId: string }
  | { kind: "rate"; runId: string; rating: number; comment: string };

/** How long token deltas are gathered before they are posted to the webview. */
export const DELTA_FLUSH_MS = 16;

const VIEW_TYPE = "glossa.translation";

export interface PanelHtmlOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

/** Escapes a value for use inside an HTML attribute. */
function attr(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * The panel's HTML. The page itself is an empty shell: webview/main.ts builds the interface, so
 * this markup is all a standalone test page needs to reproduce the panel.
 */
export function panelHtml({ cspSource, nonce, scriptUri, styleUri }: PanelHtmlOptions): string {
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${attr(styleUri)}" nonce="${attr(nonce)}">
<title>Glossa</title>
</head>
<body>
<main id="app" aria-busy="true"><p class="boot">Loading the translation panel…</p></main>
<script nonce="${attr(nonce)}" src="${attr(scriptUri)}"></script>
</body>
</html>`;
}

/** State of the run the panel currently shows. */
interface RunState {
  info: RunInfo;
  /** Every message of this run, deltas coalesced, to replay when the webview (re)loads. */
  replay: HostMessage[];
  finished: boolean;
  /** The last decision received for this run, answered by the next decisionResult(). */
  awaiting: DecisionKind | null;
  decided: boolean;
  rated: boolean;
}

/**
 * The translation panel beside the editor: one per window. It streams a run's agent events to the
 * webview and reports the translator's decisions back.
 */
export class TranslationPanel implements vscode.Disposable {
  private static current: TranslationPanel | undefined;

  private readonly decisionEmitter = new vscode.EventEmitter<PanelDecision>();
  private readonly cancelEmitter = new vscode.EventEmitter<string>();
  /** Fired when the translator accepts, edits, rejects or rates the current run. */
  readonly onDecision: vscode.Event<PanelDecision> = this.decisionEmitter.event;
  /** Fired with the run id when the translator presses Cancel while a run is streaming. */
  readonly onCancel: vscode.Event<string> = this.cancelEmitter.event;

  private readonly disposables: vscode.Disposable[] = [];
  private run: RunState | undefined;
  /** Messages not yet posted: deltas wait up to DELTA_FLUSH_MS so they can be merged. */
  private pending: HostMessage[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the webview has said `ready` since it was last loaded; nothing is posted before that. */
  private ready = false;
  private readonly createdAt = performance.now();
  private disposed = false;

  /** Opens the panel beside the active editor (or reveals it) without taking focus. */
  static show(extensionUri: vscode.Uri, log: (msg: string) => void): TranslationPanel {
    const existing = TranslationPanel.current;
    if (existing) {
      existing.panel.reveal(vscode.ViewColumn.Beside, true);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      "Glossa",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      {
        enableScripts: true,
        retainContextWhenHidden: true,
        localResourceRoots: [
          vscode.Uri.joinPath(extensionUri, "dist", "webview"),
          vscode.Uri.joinPath(extensionUri, "media"),
        ],
      },
    );
    TranslationPanel.current = new TranslationPanel(panel, extensionUri, log);
    return TranslationPanel.current;
  }

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    extensionUri: vscode.Uri,
    private readonly log: (msg: string) => void,
  ) {
    const webview = panel.webview;
    const nonce = randomBytes(16).toString("base64");
    webview.html = panelHtml({
      cspSource: webview.cspSource,
      nonce,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", "main.js")).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "media", "panel.css")).toString(),
    });
    this.disposables.push(
      webview.onDidReceiveMessage((raw: unknown) => this.receive(raw)),
      panel.onDidDispose(() => this.cleanUp()),
      this.decisionEmitter,
      this.cancelEmitter,
    );
  }

  /** Shows a new run; anything still queued for the previous run is dropped. */
  startRun(info: RunInfo): void {
    if (this.disposed) return;
    this.cancelFlush();
    this.pending = [];
    this.panel.title = `Glossa: ${info.sourceLang} → ${info.targetLang}`;
    const message: HostMessage = { type: "run-start", ...info };
    this.run = { info, replay: [message], finished: false, awaiting: null, decided: false, rated: false };
    this.post(message);
  }

  /** Forwards one agent event. Deltas are batched for a frame; every other event flushes the batch first. */
  pushEvent(runId: string, event: AgentEvent): void {
    const run = this.run;
    if (this.disposed || !run) return;
    if (runId !== run.info.runId) {
      this.log(`Glossa panel: dropped a ${event.type} event for run ${runId}; the panel shows run ${run.info.runId}`);
      return;
    }
    if (event.type === "done" || event.type === "error") run.finished = true;
    const message: AgentEventMessage = { type: "agent-event", runId, event };
    appendCoalesced(run.replay, message);
    appendCoalesced(this.pending, message);
    if (isDeltaEvent(event)) {
      this.flushTimer ??= setTimeout(() => {
        this.flushTimer = undefined;
        this.flush();
      }, DELTA_FLUSH_MS);
    } else {
      this.flush();
    }
  }

  /** Tells the translator whether their decision about `runId` was recorded. */
  decisionResult(runId: string, ok: boolean, message: string): void {
    const run = this.run;
    if (this.disposed || !run || run.info.runId !== runId) {
      this.log(`Glossa panel: decision result for run ${runId} arrived after the panel moved on: ${message}`);
      return;
    }
    const result: DecisionResultMessage = { type: "decision-result", runId, ok, message };
    const decision = run.awaiting;
    run.awaiting = null;
    if (decision) {
      result.decision = decision;
      if (ok && decision === "rate") run.rated = true;
      else if (ok) run.decided = true;
    }
    this.flush();
    run.replay.push(result);
    this.post(result);
  }

  dispose(): void {
    if (this.disposed) return;
    // Disposing the panel fires onDidDispose, which runs cleanUp().
    this.panel.dispose();
    this.cleanUp();
  }

  private cleanUp(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.cancelFlush();
    this.pending = [];
    if (TranslationPanel.current === this) TranslationPanel.current = undefined;
    for (const d of this.disposables.splice(0)) d.dispose();
  }

  private cancelFlush(): void {
    if (this.flushTimer !== undefined) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
  }

  private flush(): void {
    this.cancelFlush();
    const messages = this.pending;
    this.pending = [];
    for (const m of messages) this.post(m);
  }

  private post(message: HostMessage): void {
    // Before `ready` the webview may not be listening; the replay on `ready` delivers everything.
    if (this.disposed || !this.ready) return;
    this.panel.webview.postMessage(message).then(
      (delivered) => {
        if (!delivered) this.log(`Glossa panel: the webview did not take a ${message.type} message`);
      },
      (e: unknown) => this.log(`Glossa panel: posting ${message.type} failed: ${String(e)}`),
    );
  }

  private receive(raw: unknown): void {
    const message = parseWebviewMessage(raw, (reason) =>
      this.log(`Glossa panel: ignored an invalid message from the webview: ${reason}`),
    );
    if (!message) return;
    if (message.type === "ready") {
      this.replay();
      return;
    }
    if (message.type === "log") {
      this.log(`Glossa panel (webview ${message.level}): ${message.message}`);
      return;
    }
    const run = this.run;
    if (!run || run.info.runId !== message.runId) {
      this.log(`Glossa panel: ignored ${message.type} for run ${message.runId}, which is not the current run`);
      return;
    }
    if (message.type === "cancel") {
      if (run.finished) this.log(`Glossa panel: ignored cancel for run ${message.runId}, which has finished`);
      else this.cancelEmitter.fire(message.runId);
      return;
    }
    const decision = toDecision(message);
    if (!run.finished) {
      this.log(`Glossa panel: ignored ${message.type} for run ${message.runId}, which is still running`);
      return;
    }
    if (decision.kind === "rate" ? run.rated : run.decided) {
      this.log(`Glossa panel: ignored a second ${message.type} for run ${message.runId}`);
      return;
    }
    run.awaiting = decision.kind;
    this.decisionEmitter.fire(decision);
  }

  /** Sends the current run from the start: the webview was (re)loaded and has nothing. */
  private replay(): void {
    this.log(`panel ready ${(performance.now() - this.createdAt).toFixed(0)} ms after it was created`);
    this.ready = true;
    this.cancelFlush();
    this.pending = [];
    for (const m of this.run?.replay ?? []) this.post(m);
  }
}

function toDecision(message: Exclude<WebviewMessage, { type: "ready" | "log" | "cancel" }>): PanelDecision {
  switch (message.type) {
    case "accept":
      return { kind: "accept", runId: message.runId, text: message.text };
    case "edit-accept":
      return { kind: "edit", runId: message.runId, text: message.text };
    case "reject":
      return { kind: "reject", runId: message.runId };
    case "rate":
      return { kind: "rate", runId: message.runId, rating: message.rating, comment: message.comment };
  }
}
