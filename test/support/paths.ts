import { join, resolve } from "node:path";

export const ROOT = resolve(__dirname, "..", "..");
export const SHARED_DATA = resolve(ROOT, "..", "shared", "data");
export const CEDICT_FULL = join(SHARED_DATA, "cc-cedict", "cedict_1_0_ts_utf-8_mdbg.txt.gz");
export const DEMO_GLOSSARY = join(ROOT, "media", "glossary", "cc-cedict-idioms-neologisms.u8");
