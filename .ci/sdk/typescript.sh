#!/usr/bin/env bash
# The TypeScript SDK's tests (clients/typescript, @sgam/client) against a real `sgam serve`:
#
#   bash .ci/sdk/typescript.sh [node --test options]
#
# 1. `npm ci` in clients/typescript: its devDependencies only (typescript,
#    @types/node, and `ai` for the AI SDK tools of @sgam/client/ai), every
#    version pinned by package-lock.json; the package has no runtime
#    dependencies (`ai` is an optional peer), which this script checks;
# 2. the build (tsc: dist/, what `npm pack` ships) and the tests' build
#    (build/), then `npm pack --dry-run`;
# 3. the AI SDK example (examples/typescript/ai-sdk-capture-loop): `npm ci`
#    there (the package as packed, and the example's pinned dependencies),
#    then its type check; test/capture.test.ts runs it;
# 4. .ci/sdk/serve.sh starts the servers (sgam built from this checkout, or
#    $SGAM_BIN), `node --test` runs the tests against them, and the servers
#    are stopped, pass or fail.
#
# Node 20 or later. Work files (database, logs) go to a temporary directory,
# removed at the end; $SGAM_SDK_WORK names one to keep instead.
set -euo pipefail

name=typescript.sh
source "$(dirname "$0")/work.sh"
pkg=$root/clients/typescript

node -e '
const major = Number(process.versions.node.split(".")[0]);
if (major < 20) { console.error(`typescript.sh: the SDK needs Node 20 or later, not ${process.versions.node}`); process.exit(1); }
const pkg = require(process.argv[1]);
if (Object.keys(pkg.dependencies ?? {}).length) { console.error("typescript.sh: @sgam/client must have no runtime dependencies"); process.exit(1); }
' "$pkg/package.json"

cd "$pkg"
# The registry drops a connection now and then (ECONNRESET mid-download):
# npm retries each fetch, and a whole install that still fails is tried
# again, from the same lock.
export npm_config_fetch_retries=5 npm_config_fetch_retry_mintimeout=2000 npm_config_fetch_retry_maxtimeout=30000
npm_ci() {
	local try
	for try in 1 2 3; do
		npm ci --no-audit --no-fund --loglevel=error && return 0
		echo "typescript.sh: npm ci failed (try $try of 3) in $PWD" >&2
		sleep $((try * 5))
	done
	return 1
}

echo "typescript.sh: npm ci (devDependencies from package-lock.json)" >&2
npm_ci
rm -rf dist build
npx --no-install tsc -p tsconfig.json
npx --no-install tsc -p tsconfig.test.json
npm pack --dry-run --loglevel=error >/dev/null 2>&1 || { echo "typescript.sh: npm pack failed" >&2; npm pack --dry-run; exit 1; }

example=$root/examples/typescript/ai-sdk-capture-loop
echo "typescript.sh: the AI SDK example: npm ci and its type check" >&2
(cd "$example" && npm_ci && npm run --silent check)

bash "$root/.ci/sdk/serve.sh" start "$serve"

status=0
SGAM_SDK_ENV=$serve/env node --test "$@" build/test/*.test.js || status=$?
echo "typescript.sh: done in $(($(date +%s) - start)) s" >&2
exit $status
