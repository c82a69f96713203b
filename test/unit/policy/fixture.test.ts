import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { embeddedFixture } from "../../../scripts/make-embedded-fixture";
import { ROOT } from "../../support/paths";

describe("embedded policy fixture", () => {
  it("matches what the prompt builder, retriever and evidence format produce today", async function () {
    this.timeout(30_000);
    const committed = JSON.parse(await readFile(join(ROOT, "test", "fixtures", "embedded-trajectories.json"), "utf8"));
    assert.deepEqual(
      await embeddedFixture(),
      committed,
      "the prompt, retrieval or evidence format changed: run `npx tsx scripts/make-embedded-fixture.ts`, then `bash scripts/build-tiny-models.sh` retrains the tiny policy on it",
    );
  });
});
