#!/usr/bin/env node
/**
 * Bundles Glossa with esbuild.
 *
 *   node scripts/build.mjs                 development build (sourcemaps)
 *   node scripts/build.mjs --production    minified, no sourcemaps
 *   node scripts/build.mjs --watch         rebuild on change
 *   node scripts/build.mjs --only webview  build only the named entries (comma-separated or repeated)
 *
 * To add a bundle, add one object to ENTRIES. Entries whose source file does not exist yet are
 * skipped with a note instead of failing the build.
 */
import { existsSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Modules that must stay outside the Node bundles: the editor API and native/ONNX runtimes. */
const NODE_EXTERNALS = ["vscode", "@huggingface/transformers", "onnxruntime-node", "sharp", "hnswlib-node"];

/** Settings shared by every bundle for the extension host and the command line. */
const node = { platform: "node", format: "cjs", target: "node20", external: NODE_EXTERNALS };

/**
 * Every bundle: a name (for --only), the entry point and output file (relative to the repository
 * root), and any esbuild options that differ from the defaults below.
 */
export const ENTRIES = [
  {
    name: "webview",
    entry: "webview/main.ts",
    outfile: "dist/webview/main.js",
    options: { platform: "browser", format: "iife", target: "es2022" },
  },
  { name: "extension", entry: "extension/host/extension.ts", outfile: "dist/extension.js", options: { ...node } },
  {
    name: "cli",
    entry: "extension/cli/main.ts",
    outfile: "dist/cli.js",
    options: { ...node, banner: { js: "#!/usr/bin/env node" } },
  },
  { name: "bench-slice", entry: "bench/slice.ts", outfile: "dist/bench-slice.js", options: { ...node } },
  {
    name: "dense-build-worker",
    entry: "extension/core/retrieval/dense/denseBuildWorker.ts",
    outfile: "dist/dense-build-worker.js",
    options: { ...node },
  },
  { name: "electron-run", entry: "test/electron/run.ts", outfile: "dist/electron-run.js", options: { ...node } },
  { name: "electron-suite", entry: "test/electron/suite.ts", outfile: "dist/electron-suite.js", options: { ...node } },
  {
    name: "index-update-worker",
    entry: "extension/core/retrieval/indexUpdateWorker.ts",
    outfile: "dist/index-update-worker.js",
    options: { ...node },
  },
  { name: "e2e", entry: "test/e2e/run.ts", outfile: "dist/e2e.js", options: { ...node } },
  {
    name: "scripted-server",
    entry: "test/support/scriptedServerMain.ts",
    outfile: "dist/scripted-server.js",
    options: { ...node },
  },
];

function parseArgs(argv) {
  const args = { production: false, watch: false, only: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--production") args.production = true;
    else if (a === "--watch") args.watch = true;
    else if (a === "--only" || a.startsWith("--only=")) {
      const value = a === "--only" ? argv[++i] : a.slice("--only=".length);
      if (!value) throw new Error("--only needs a list of entry names");
      args.only = [...(args.only ?? []), ...value.split(",").filter(Boolean)];
    } else throw new Error(`unknown argument: ${a}`);
  }
  return args;
}

function esbuildOptions(entry, production) {
  return {
    entryPoints: [join(ROOT, entry.entry)],
    outfile: join(ROOT, entry.outfile),
    bundle: true,
    minify: production,
    sourcemap: production ? false : "linked",
    sourcesContent: !production,
    // Browser code has no `process`; Node bundles keep reading the real environment.
    ...(entry.options.platform === "browser"
      ? { define: { "process.env.NODE_ENV": JSON.stringify(production ? "production" : "development") } }
      : {}),
    legalComments: production ? "none" : "inline",
    logLevel: "warning",
    ...entry.options,
  };
}

/** Builds (or watches) the selected entries; returns the names that were built. */
export async function build({ production = false, watch = false, only = null } = {}) {
  if (only) {
    const unknown = only.filter((name) => !ENTRIES.some((e) => e.name === name));
    if (unknown.length > 0) {
      throw new Error(`unknown entry ${unknown.join(", ")}; known: ${ENTRIES.map((e) => e.name).join(", ")}`);
    }
  }
  const selected = ENTRIES.filter((e) => !only || only.includes(e.name));
  const built = [];
  const failed = [];
  for (const entry of selected) {
    if (!existsSync(join(ROOT, entry.entry))) {
      console.log(`skip ${entry.name}: ${entry.entry} does not exist yet`);
      continue;
    }
    const options = esbuildOptions(entry, production);
    // A sourcemap left by an earlier development build would otherwise ship with a production bundle.
    if (production) rmSync(`${options.outfile}.map`, { force: true });
    if (watch) {
      const ctx = await esbuild.context(options);
      await ctx.watch();
      console.log(`watching ${entry.entry}`);
    } else {
      try {
        await esbuild.build(options);
      } catch {
        // esbuild has already printed the errors; build the other entries before failing.
        failed.push(entry.name);
        continue;
      }
      console.log(`built ${entry.entry} -> ${relative(ROOT, options.outfile)}${production ? " (production)" : ""}`);
    }
    built.push(entry.name);
  }
  if (failed.length > 0) throw new Error(`build failed: ${failed.join(", ")}`);
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    await build(parseArgs(process.argv.slice(2)));
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    process.exit(1);
  }
}
