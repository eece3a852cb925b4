#!/usr/bin/env bash
# The whole test suite: build, bring up the project's containerd (installing what is missing), run every Jest test
# (unit and integration, one at a time since integration tests share the runtime), and print one summary line.
# A containerd this run started is stopped again at the end; one that was already running is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then echo "test: integration tests need root (containerd, runc, CNI)" >&2; exit 1; fi
npm run --silent build
# The VM test (test/integration/vm) boots its own guest and uses nothing of this machine's runtime: in a whole-suite run
# it runs after the lock is released, so other runs need not wait for its guest; a run of it alone takes no lock.
vm_tests=dist/test/integration/vm/
vm_only=0
if (($# > 0)); then
  vm_only=1
  for f in "$@"; do [[ $f == *"$vm_tests"* ]] || vm_only=0; done
fi
# One test run at a time per machine: integration tests share the containerd and the CNI shim socket.
mkdir -p /run/nodelet
exec 9>/run/nodelet/tests.lock
((vm_only)) || flock 9
pidfile=/run/nodelet/containerd.pid
started_runtime=1
if ((vm_only)) || { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }; then started_runtime=0; fi
results=$(mktemp /tmp/nodelet-jest-XXXXXX.json)
stop_runtime() {
  if [ "$started_runtime" = 1 ]; then bash scripts/runtime.sh down || true; fi
  started_runtime=0
}
cleanup() {
  rm -f "$results" "$results.vm"
  stop_runtime
}
trap cleanup EXIT
# The rig first: it installs what a bare Debian lacks, the CA certificates Go's module downloads need among them.
((vm_only)) || bash scripts/runtime.sh up
# What only the tests use, none of it in a minimal Debian 12: curl, the image registry the tests pull from
# (docker-registry: distribution v2.8) and htpasswd for its basic auth (apache2-utils).
log() { printf 'test: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
. scripts/common.sh
ensure_debian_packages curl docker-registry apache2-utils
# The Kubernetes binaries the control-plane tests run (built once into /var/cache/nodelet; a no-op afterwards).
bash scripts/kube-build.sh >/dev/null
status=0
jest() { node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand --json "$@"; }
if (($# == 0)); then
  jest --outputFile="$results" --testPathIgnorePatterns "/$vm_tests" || status=$?
  stop_runtime
  flock -u 9
  jest --outputFile="$results.vm" --selectProjects integration --testPathPattern "/$vm_tests" || status=$?
else
  jest --outputFile="$results" "$@" || status=$?
fi
summary=$(node -e '
  const files = process.argv.slice(1).filter((f) => require("fs").existsSync(f));
  const sum = (k) => files.reduce((n, f) => n + JSON.parse(require("fs").readFileSync(f, "utf8"))[k], 0);
  console.log(`${sum("numPassedTests")} passed, ${sum("numFailedTests")} failed` + (sum("numPendingTests") ? `, ${sum("numPendingTests")} skipped` : ""));
' "$results" "$results.vm" || true)
cleanup
trap - EXIT
# The summary is the last line, as CI reads it.
echo "$summary"
exit "$status"
