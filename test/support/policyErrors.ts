import assert from "node:assert/strict";
import { PolicyError } from "../../extension/core/policy/types";

/** Awaits a promise that must reject with a one-line PolicyError of this code, and returns the error. */
export async function expectPolicyError(promise: Promise<unknown>, code: string): Promise<PolicyError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof PolicyError, `expected a PolicyError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.ok(!err.message.includes("\n"), `message should be one line: ${err.message}`);
    return err;
  }
  assert.fail(`expected PolicyError(${code})`);
}
