import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import { failedTrajectory, TranslationAgent } from "../core/agent/agent";
import type { Trajectory, TranslateRequest } from "../core/agent/types";
import { type FeedbackStore, makeRecord } from "../core/feedback/store";
import { type PanelDecision, TranslationPanel } from "./panel";
import type { Services } from "./services";

interface RunRecord {
  runId: string;
  document: vscode.TextDocument;
  range: vscode.Range;
  source: string;
  context: string | null;
  trajectory: Trajectory | null;
  decided: boolean;
  controller: AbortController;
}

/**
 * "Glossa: Translate Selection": runs the agent on the selection, streams its steps to the panel,
 * and turns the translator's decision into an edit and a feedback record.
 */
export class TranslateController implements vscode.Disposable {
  private readonly runs = new Map<string, RunRecord>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private panel: TranslationPanel | undefined;

  constructor(private readonly services: Services) {}

  async translateSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("Glossa: open a file and select the text to translate.");
      return;
    }
    const selection = editor.selection;
    const range = selection.isEmpty ? editor.document.lineAt(selection.active.line).range : selection;
    const source = editor.document.getText(range);
    if (!source.trim()) {
      void vscode.window.showInformationMessage("Glossa: select the text to translate.");
      return;
    }
    const settings = this.services.settings();
    const runId = randomUUID();
    const controller = new AbortController();
    const context = surroundingText(editor.document, range, settings.contextChars);
    const run: RunRecord = {
      runId,
      document: editor.document,
      range,
      source,
      context,
      trajectory: null,
      decided: false,
      controller,
    };
    this.runs.set(runId, run);
    for (const [id, other] of this.runs) if (id !== runId && !other.trajectory) other.controller.abort();

    const request: TranslateRequest = {
      text: source,
      sourceLang: settings.sourceLang,
      targetLang: settings.targetLang,
      ...(context ? { context } : {}),
      mode: settings.mode,
      style: settings.style,
      limits: settings.limits,
    };
    const panel = this.showPanel();
    // Show the source at once; loading the model and the glossaries can take a moment on first use.
    const provisionalId =
      settings.backend === "openai"
        ? `openai:${settings.endpoint}#${settings.model}`
        : `embedded:${settings.modelPath || settings.modelId}`;
    panel.startRun({
      runId,
      source,
      sourceLang: settings.sourceLang,
      targetLang: settings.targetLang,
      mode: settings.mode,
      policyId: provisionalId,
    });
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "Glossa: translating", cancellable: true },
      async (_progress, token) => {
        token.onCancellationRequested(() => controller.abort());
        let policyId = provisionalId;
        try {
          const started = performance.now();
          const [policy, retriever] = await Promise.all([
            this.services.policy(controller.signal),
            this.services.retriever(),
          ]);
          policyId = policy.id;
          const ready = performance.now();
          const agent = new TranslationAgent(policy, retriever);
          let first = 0;
          run.trajectory = await agent.run(
            request,
            (event) => {
              if (!first && event.type !== "turn-start") first = performance.now();
              panel.pushEvent(runId, event);
            },
            controller.signal,
          );
          const t = run.trajectory;
          this.services.log(
            `run ${runId}: policy and glossaries ready in ${(ready - started).toFixed(0)} ms, first step after ${(first - started).toFixed(0)} ms, ` +
              `${t.turns} turn(s), ${t.searches} search(es), ${t.completionTokens} tokens, ${t.timings.totalMs} ms${t.error ? `, error ${t.error.code}` : ""}`,
          );
        } catch (e) {
          // Setting up the policy or the glossaries failed before the agent ran (missing model, bad file).
          const message = (e as Error).message;
          this.services.log(`translate failed before the agent ran: ${message}`);
          const trajectory = failedTrajectory(request, policyId, { code: "policy", message });
          panel.pushEvent(runId, { type: "error", code: "policy", message, trajectory });
          void vscode.window.showErrorMessage(`Glossa: ${message}`, "Open Settings").then((choice) => {
            if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", "glossa.policy");
          });
          this.runs.delete(runId);
        }
      },
    );
  }

  cancel(): void {
    for (const run of this.runs.values()) if (!run.trajectory) run.controller.abort();
  }

  private showPanel(): TranslationPanel {
    const panel = TranslationPanel.show(this.services.extensionUri, this.services.log);
    if (panel !== this.panel) {
      this.panel = panel;
      this.subscriptions.push(
        panel.onDecision((d) => void this.decide(panel, d)),
        panel.onCancel((runId) => this.runs.get(runId)?.controller.abort()),
      );
    }
    return panel;
  }

  private async decide(panel: TranslationPanel, decision: PanelDecision): Promise<void> {
    const run = this.runs.get(decision.runId);
    if (!run?.trajectory) {
      panel.decisionResult(decision.runId, false, "This translation is no longer open; run Translate Selection again.");
      return;
    }
    if (run.decided && decision.kind !== "rate") {
      panel.decisionResult(decision.runId, false, "A decision was already recorded for this translation.");
      return;
    }
    try {
      let message: string;
      if (decision.kind === "accept" || decision.kind === "edit") {
        await this.replace(run, decision.text);
        message =
          decision.kind === "edit"
            ? "Edited translation inserted (Ctrl+Z undoes it)."
            : "Translation inserted (Ctrl+Z undoes it).";
      } else {
        message =
          decision.kind === "reject"
            ? "Rejected; the text was left unchanged."
            : `Rating ${decision.rating}/5 recorded.`;
      }
      if (decision.kind !== "rate") run.decided = true;
      await this.record(run, decision);
      panel.decisionResult(decision.runId, true, message);
    } catch (e) {
      const message = (e as Error).message;
      this.services.log(`decision ${decision.kind} failed: ${message}`);
      panel.decisionResult(decision.runId, false, message);
    }
  }

  /** Replaces the original range if it still holds the source text; one WorkspaceEdit = one undo step. */
  private async replace(run: RunRecord, text: string): Promise<void> {
    if (run.document.isClosed) throw new Error("The document was closed; the translation was not inserted.");
    const current = run.document.getText(run.range);
    if (current !== run.source) {
      await vscode.env.clipboard.writeText(text);
      throw new Error(
        "The source text changed since it was translated, so it was not replaced. The translation is on the clipboard.",
      );
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(run.document.uri, run.range, text);
    if (!(await vscode.workspace.applyEdit(edit)))
      throw new Error("VS Code refused the edit (is the file read-only?).");
  }

  private async record(run: RunRecord, decision: PanelDecision): Promise<void> {
    const trajectory = run.trajectory!;
    const store: FeedbackStore = this.services.feedback();
    const decisionName = { accept: "accepted", edit: "edited", reject: "rejected", rate: "rated" } as const;
    const record = makeRecord({
      location: {
        file: vscode.workspace.asRelativePath(run.document.uri, false),
        startLine: run.range.start.line,
        startCharacter: run.range.start.character,
        endLine: run.range.end.line,
        endCharacter: run.range.end.character,
      },
      source: run.source,
      sourceLang: trajectory.request.sourceLang,
      targetLang: trajectory.request.targetLang,
      context: run.context,
      trajectory,
      decision: decisionName[decision.kind],
      finalText: decision.kind === "accept" || decision.kind === "edit" ? decision.text : null,
      rating: decision.kind === "rate" ? decision.rating : null,
      comment: decision.kind === "rate" && decision.comment ? decision.comment : null,
    });
    try {
      await store.append(record);
    } catch (e) {
      // The record stays queued in the store and is written with the next one.
      const message = `Could not write the feedback log ${store.file}: ${(e as Error).message}. ${store.pending} decision(s) are kept in memory and will be written when it works again.`;
      void vscode.window.showErrorMessage(`Glossa: ${message}`, "Retry").then((choice) => {
        if (choice)
          void store.flush().catch((err: Error) => this.services.log(`feedback retry failed: ${err.message}`));
      });
      throw new Error(message);
    }
  }

  dispose(): void {
    this.cancel();
    for (const s of this.subscriptions) s.dispose();
  }
}

/** Text around the selection (half before, half after), for the policy's disambiguation only. */
function surroundingText(document: vscode.TextDocument, range: vscode.Range, chars: number): string | null {
  if (chars <= 0) return null;
  const start = document.offsetAt(range.start);
  const end = document.offsetAt(range.end);
  const all = document.getText();
  const before = all.slice(Math.max(0, start - chars / 2), start);
  const after = all.slice(end, end + chars / 2);
  const context = `${before}…${after}`;
  return before.trim() || after.trim() ? context : null;
}
