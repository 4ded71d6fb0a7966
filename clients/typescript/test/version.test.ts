// The SDK's version follows the server's: the commit tagged vX.Y.Z is X.Y.Z
// (package.json, package-lock.json and src/version.ts alike), any other
// commit 0.0.0-dev.0, as the Python SDK's 0.0.0.dev0.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { VERSION } from "../src/index.js";
import { REPO } from "./helpers.js";

function json(file: string): any {
  return JSON.parse(readFileSync(path.join(REPO, "clients", "typescript", file), "utf8"));
}

/** The release tag (vX.Y.Z) of the checked-out commit, "" for none, null without git. */
function releaseTag(): string | null {
  try {
    const tag = execFileSync("git", ["describe", "--tags", "--exact-match", "--match", "v[0-9]*"], {
      cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 10_000,
    }).trim();
    return /^v\d+\.\d+\.\d+$/.test(tag) ? tag : "";
  } catch (e) {
    // git ran and found no tag: it exits 128; no git at all: ENOENT.
    return (e as { status?: number }).status === 128 ? "" : null;
  }
}

test("the version follows the server's", (t) => {
  const lock = json("package-lock.json");
  assert.deepEqual([json("package.json").version, lock.version, lock.packages[""].version], [VERSION, VERSION, VERSION]);
  assert.match(VERSION, /^\d+\.\d+\.\d+(-dev\.0)?$/);
  const tag = releaseTag();
  if (tag === null) return t.skip("no git to read the commit's tag with");
  assert.equal(VERSION, tag ? tag.slice(1) : "0.0.0-dev.0");
});
