#!/usr/bin/env bash
# Builds what Kubernetes' conformance run needs from the upstream Go modules pinned by kube/e2e/go.mod and go.sum, into a
# cache outside the repository keyed by the Kubernetes version:
#   ${NODELET_CACHE:-/var/cache/nodelet}/e2e/<k8s version>/
#     e2e.test    the end-to-end suite (go test -c k8s.io/kubernetes/test/e2e)
#     ginkgo      the ginkgo CLI (github.com/onsi/ginkgo/v2/ginkgo), which runs e2e.test in parallel processes
#     agnhost     the test images' programs (k8s.io/kubernetes/test/images/...), static: scripts/runtime.sh e2e-images
#     nnp         puts them into images under their upstream names
# with the module and build caches of scripts/kube-build.sh (${NODELET_CACHE}/go). A second run finds them and builds
# nothing. Prints the directory as its last line; progress goes to stderr.
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")/.."
repo=$PWD

tag=e2e-build
. "$repo/scripts/go-env.sh"

mod=kube/e2e
k8s_version=$(awk '($1 == "k8s.io/kubernetes" && $2 ~ /^v1\./) { print $2 } ($1 == "require" && $2 == "k8s.io/kubernetes") { print $3 }' $mod/go.mod)
if [ -z "$k8s_version" ]; then echo "e2e-build: $mod/go.mod does not require k8s.io/kubernetes" >&2; exit 1; fi
out=$cache/e2e/$k8s_version

# name|package|how: "test" = go test -c, "build" = go build
programs=(
  "e2e.test|k8s.io/kubernetes/test/e2e|test"
  "ginkgo|github.com/onsi/ginkgo/v2/ginkgo|build"
  "agnhost|k8s.io/kubernetes/test/images/agnhost|build"
  "nnp|k8s.io/kubernetes/test/images/nonewprivs|build"
)

# The stamp names everything the programs depend on: the pinned modules, this script and the Go version.
stamp=$({ cat $mod/go.mod $mod/go.sum "$script" scripts/go-env.sh; "$go" version; } | sha256sum | cut -d' ' -f1)

up_to_date() {
  [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] || return 1
  local p
  for p in "${programs[@]}"; do [ -x "$out/${p%%|*}" ] || return 1; done
}

if up_to_date; then
  echo "e2e-build: the e2e suite of Kubernetes $k8s_version is up to date in $out" >&2
  echo "$out"
  exit 0
fi

mkdir -p "$cache/e2e"
exec 8>"$cache/e2e/.build.lock"
flock 8
if up_to_date; then # another run built them while this one waited
  echo "e2e-build: the e2e suite of Kubernetes $k8s_version is up to date in $out" >&2
  echo "$out"
  exit 0
fi

start=$(date +%s)
elapsed() { local s=$(($(date +%s) - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

echo "e2e-build: building the e2e suite of Kubernetes $k8s_version with $("$go" version | cut -d' ' -f3) into $out (GOMODCACHE=$GOMODCACHE, GOCACHE=$GOCACHE)" >&2
pkgs=()
for p in "${programs[@]}"; do IFS='|' read -r _ pkg _ <<<"$p"; pkgs+=("$pkg"); done
if ! list_err=$(cd "$repo/$mod" && "$go" list -deps -test "${pkgs[@]}" 2>&1 >/dev/null); then
  echo "$list_err" >&2
  echo "e2e-build: could not get the modules of $mod/go.mod (a fresh machine needs the Go module proxy)" >&2
  exit 1
fi
echo "e2e-build: modules ready after $(elapsed) ($(echo "$list_err" | grep -c '^go: downloading ' || true) downloaded)" >&2

# The version the suite reports (and compares with the cluster's), stamped as scripts/kube-build.sh stamps the binaries.
build_date=$(cd "$repo/$mod" && "$go" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
minor=${k8s_version#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitCommit= -X $p.gitTreeState=archive -X $p.buildDate=$build_date"
done

building=$out.building
rm -rf "$building"
mkdir -p "$building"
# One program after the other: e2e.test alone keeps both cores busy for most of a cold build, and the others share
# most of its packages, so they are quick once it is done.
for p in "${programs[@]}"; do
  IFS='|' read -r name pkg how <<<"$p"
  t0=$(date +%s)
  echo "e2e-build:   $name ($pkg)..." >&2
  if [ "$how" = test ]; then
    (cd "$repo/$mod" && "$go" test -c -trimpath -ldflags "$ldflags" -o "$building/$name" "$pkg")
  else
    (cd "$repo/$mod" && "$go" build -trimpath -ldflags "$ldflags" -o "$building/$name" "$pkg")
  fi
  echo "e2e-build:   $name linked in $(($(date +%s) - t0)) s ($(du -h "$building/$name" | cut -f1)), at $(elapsed)" >&2
done
echo "$stamp" >"$building/.stamp"
rm -rf "$out"
mv "$building" "$out"
echo "e2e-build: built ${#programs[@]} programs in $(elapsed): $(du -sh "$out" | cut -f1) in $out" >&2
echo "$out"
