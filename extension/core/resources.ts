import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The folder holding package.json, media/ and protocol/: found by walking up from this module, so
 * the same code works from the bundled dist/ files and from the TypeScript sources.
 */
export function packageRoot(from = __dirname): string {
  let dir = from;
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      const name = (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name;
      if (name === "glossa") return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the glossa package root above ${from}`);
    dir = parent;
  }
}

export function demoGlossaryPath(root = packageRoot()): string {
  return join(root, "media", "glossary", "cc-cedict-idioms-neologisms.u8");
}
