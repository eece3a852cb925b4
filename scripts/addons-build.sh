#!/usr/bin/env bash
# Builds the cluster addons that are not part of Kubernetes itself from their upstream Go modules, each pinned by a
# module of its own under kube/ (so their requirements never change the Kubernetes build of scripts/kube-build.sh):
#   CoreDNS (kube/coredns, the version kubeadm deploys) -> ${NODELET_CACHE:-/var/cache/nodelet}/addons/coredns/<version>/coredns
# with the same module and build caches as kube-build.sh (${NODELET_CACHE}/go). A second run finds the binaries and
# builds nothing. Prints "<name> <version> <binary>" per addon on stdout; progress goes to stderr.
# kindnetd is not built: the Go module proxy refuses sigs.k8s.io/kind/images/kindnetd at every version (see kube/README.md).
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")/.."
repo=$PWD

tag=addons-build
. "$repo/scripts/go-env.sh"
. "$repo/scripts/kube-lib.sh"

# name|module dir under kube/|module path|main package|ldflags beyond -s -w
addons=(
  # As CoreDNS's Makefile, less the git commit (the proxy does not carry it); its version is a constant in coremain.
  "coredns|coredns|github.com/coredns/coredns|github.com/coredns/coredns|"
)

for entry in "${addons[@]}"; do
  IFS='|' read -r name dir module pkg ldflags <<<"$entry"
  version=$(awk -v m="$module" '($1 == m && $2 ~ /^v/) { print $2 } ($1 == "require" && $2 == m) { print $3 }' "kube/$dir/go.mod")
  if [ -z "$version" ]; then echo "addons-build: kube/$dir/go.mod does not require $module" >&2; exit 1; fi
  out=$cache/addons/$name/$version
  stamp=$({ cat "kube/$dir/go.mod" "kube/$dir/go.sum" "$script" scripts/go-env.sh scripts/kube-lib.sh; "$go" version; } | sha256sum | cut -d' ' -f1)
  if ! up_to_date_or_lock "$name $version" "$out" "$cache/addons/.build.lock" "$stamp" "$name" >/dev/null; then
    build_start=$(date +%s)
    echo "addons-build: building $name $version with $("$go" version | cut -d' ' -f3) into $out..." >&2
    downloaded=$(download_modules "$repo/kube/$dir" "$pkg")
    echo "addons-build:   modules ready after $(elapsed) ($downloaded downloaded)" >&2
    mkdir -p "$out"
    rm -f "$out/.stamp"
    (cd "$repo/kube/$dir" && "$go" build -trimpath -ldflags "-s -w $ldflags" -o "$out/$name.tmp" "$pkg")
    mv -f "$out/$name.tmp" "$out/$name"
    echo "$stamp" >"$out/.stamp"
    echo "addons-build: built $name $version in $(elapsed) ($(du -h "$out/$name" | cut -f1))" >&2
  fi
  echo "$name $version $out/$name"
done
