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
. "$repo/scripts/kube-lib.sh"

mod=kube/e2e
k8s_version=$(k8s_version_of $mod/go.mod)
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
stamp=$({ cat $mod/go.mod $mod/go.sum "$script" scripts/go-env.sh scripts/kube-lib.sh; "$go" version; } | sha256sum | cut -d' ' -f1)

names=()
for p in "${programs[@]}"; do names+=("${p%%|*}"); done
if up_to_date_or_lock "the e2e suite of Kubernetes $k8s_version is" "$out" "$cache/e2e/.build.lock" "$stamp" "${names[@]}"; then exit 0; fi

echo "e2e-build: building the e2e suite of Kubernetes $k8s_version with $("$go" version | cut -d' ' -f3) into $out (GOMODCACHE=$GOMODCACHE, GOCACHE=$GOCACHE)" >&2
pkgs=()
for p in "${programs[@]}"; do IFS='|' read -r _ pkg _ <<<"$p"; pkgs+=("$pkg"); done
downloads=$(download_modules "$repo/$mod" -test "${pkgs[@]}")
echo "e2e-build: modules ready after $(elapsed) ($downloads downloaded)" >&2

# The version the suite reports (and compares with the cluster's), stamped as scripts/kube-build.sh stamps the binaries.
ldflags=$(version_ldflags "$repo/$mod" "$k8s_version")

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
