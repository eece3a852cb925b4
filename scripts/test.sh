#!/usr/bin/env bash
# The whole test suite: build, bring up the project's containerd (installing what is missing), run every Jest test
# (unit and integration, one at a time since integration tests share the runtime), and print one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then echo "test: integration tests need root (containerd, runc, CNI)" >&2; exit 1; fi
npm run --silent build
bash scripts/runtime.sh up
# One test run at a time per machine: integration tests share the containerd and the CNI shim socket.
mkdir -p /run/nodelet
exec 9>/run/nodelet/tests.lock
flock 9
results=$(mktemp /tmp/nodelet-jest-XXXXXX.json)
trap 'rm -f "$results"' EXIT
status=0
node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand --json --outputFile="$results" "$@" || status=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
' "$results" || true
exit "$status"
