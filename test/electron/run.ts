/**
 * The same extension tested inside desktop VS Code (Electron) with @vscode/test-electron, for machines
 * that can download VS Code. Where the download is impossible (no network to the update service), it
 * says so in one line and exits 0: the code-server end-to-end test (test/e2e) covers the same path.
 *
 *   node dist/electron-run.js
 */
import { resolve } from "node:path";
import { downloadAndUnzipVSCode, runTests } from "@vscode/test-electron";

async function main(): Promise<void> {
  const root = resolve(__dirname, "..");
  let executable: string;
  try {
    executable = await downloadAndUnzipVSCode({ version: "stable", timeout: 15_000 });
  } catch (e) {
    const reason = (e as Error).message.split("\n")[0];
    console.log(`electron tests skipped: VS Code cannot be downloaded here (${reason})`);
    return;
  }
  await runTests({
    vscodeExecutablePath: executable,
    extensionDevelopmentPath: root,
    extensionTestsPath: resolve(root, "dist", "electron-suite.js"),
    launchArgs: ["--disable-extensions", "--disable-workspace-trust"],
  });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
