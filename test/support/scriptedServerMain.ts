import { readFileSync, writeFileSync } from "node:fs";
import { type ScriptedCompletion, ScriptedOpenAIServer } from "./scriptedServer";

/**
 * Runs the scripted OpenAI-compatible server as its own process (for end-to-end tests and benchmarks):
 *   node dist/scripted-server.js SCRIPTS.json [PORT_FILE]
 * Prints the base URL on stdout and, when PORT_FILE is given, writes it there.
 */
async function main(): Promise<void> {
  const [scriptsFile, urlFile] = process.argv.slice(2);
  if (!scriptsFile) {
    console.error("usage: scripted-server SCRIPTS.json [URL_FILE]");
    process.exit(2);
  }
  const scripts = JSON.parse(readFileSync(scriptsFile, "utf8")) as ScriptedCompletion[];
  const server = new ScriptedOpenAIServer(scripts);
  const url = await server.start();
  if (urlFile) writeFileSync(urlFile, url);
  console.log(url);
  const shutdown = () => void server.stop().then(() => process.exit(0));
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

void main();
