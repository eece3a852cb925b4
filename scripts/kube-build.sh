#!/usr/bin/env bash
# Builds the Kubernetes binaries (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubeadm, kubelet,
# kube-proxy) and etcd from their upstream Go modules, as pinned by kube/go.mod and kube/go.sum, into a cache outside
# the repository keyed by the Kubernetes version:
#   ${NODELET_CACHE:-/var/cache/nodelet}/kube/<k8s version>/bin
# with the module and build caches under ${NODELET_CACHE}/go. A second run finds the binaries and builds nothing.
# Prints the bin directory as its last line. Needs Go (this machine kind has it at /usr/local/go/bin/go).
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")/.."
repo=$PWD

tag=kube-build
. "$repo/scripts/go-env.sh"
. "$repo/scripts/kube-lib.sh"

k8s_version=$(k8s_version_of kube/go.mod)
if [ -z "$k8s_version" ]; then echo "kube-build: kube/go.mod does not require k8s.io/kubernetes" >&2; exit 1; fi
bin=$cache/kube/$k8s_version/bin

# The Kubernetes binaries, built from kube/ (k8s.io/kubernetes with its staging modules at their published versions).
k8s_names=(kubectl kubeadm kube-scheduler kube-proxy kube-controller-manager kubelet kube-apiserver)
k8s_pkgs=()
for n in "${k8s_names[@]}"; do k8s_pkgs+=("k8s.io/kubernetes/cmd/$n"); done
# etcd, built from kube/etcd/ (its own module, so its requirements do not change the Kubernetes build): its main
# package is the root of go.etcd.io/etcd/server/v3.
etcd_pkg=go.etcd.io/etcd/server/v3
names=("${k8s_names[@]}" etcd)

# The stamp names everything the binaries depend on: the pinned modules, this script and the Go version.
stamp=$({ cat kube/go.mod kube/go.sum kube/etcd/go.mod kube/etcd/go.sum "$script" scripts/go-env.sh scripts/kube-lib.sh; "$go" version; } | sha256sum | cut -d' ' -f1)

if up_to_date_or_lock "Kubernetes $k8s_version binaries are" "$bin" "$cache/kube/.build.lock" "$stamp" "${names[@]}"; then exit 0; fi

echo "kube-build: building Kubernetes $k8s_version and etcd $(awk '$1 == "require" && $2 == "'$etcd_pkg'" { print $3 }' kube/etcd/go.mod) with $("$go" version | cut -d' ' -f3) into $bin (GOMODCACHE=$GOMODCACHE, GOCACHE=$GOCACHE)" >&2
echo "kube-build: downloading the modules the ${#names[@]} binaries need..." >&2
k8s_downloads=$(download_modules "$repo/kube" "${k8s_pkgs[@]}")
etcd_downloads=$(download_modules "$repo/kube/etcd" "$etcd_pkg")
downloads=$((k8s_downloads + etcd_downloads))
echo "kube-build: modules ready after $(elapsed) ($downloads downloaded)" >&2

ldflags=$(version_ldflags "$repo/kube" "$k8s_version")

out=$cache/kube/$k8s_version/bin.building
rm -rf "$out"
mkdir -p "$out"
# One go build for all Kubernetes binaries: their shared packages compile once, both cores stay busy, and each binary
# is written to $out as soon as it is linked. A watcher prints one line per finished binary.
builds_done=$out.done
rm -f "$builds_done"
(
  seen=" "
  while :; do
    last=0
    [ -e "$builds_done" ] && last=1
    for f in "$out"/*; do
      [ -f "$f" ] || continue
      n=$(basename "$f")
      case "$seen" in *" $n "*) continue ;; esac
      seen+="$n "
      echo "kube-build:   $n linked at $(elapsed)" >&2
    done
    [ "$last" = 1 ] && break
    sleep 2
  done
) &
watcher=$!
# etcd builds beside the Kubernetes binaries: it is small, and the two builds fill each other's single-threaded links.
(cd "$repo/kube/etcd" && "$go" build -trimpath -ldflags "-s -w" -o "$out/etcd" "$etcd_pkg") &
etcd_build=$!
status=0
(cd "$repo/kube" && "$go" build -trimpath -ldflags "$ldflags" -o "$out/" "${k8s_pkgs[@]}") || status=$?
etcd_status=0
wait "$etcd_build" || etcd_status=$?
touch "$builds_done"
wait "$watcher" || true
rm -f "$builds_done"
if [ "$status" != 0 ] || [ "$etcd_status" != 0 ]; then
  echo "kube-build: go build failed after $(elapsed) (Kubernetes: exit $status, etcd: exit $etcd_status)" >&2
  exit 1
fi
for n in "${names[@]}"; do
  if [ ! -x "$out/$n" ]; then echo "kube-build: $n was not built" >&2; exit 1; fi
done
echo "$stamp" >"$out/.stamp"
rm -rf "$bin"
mv "$out" "$bin"
echo "kube-build: built ${#names[@]} binaries in $(elapsed): $(du -sh "$bin" | cut -f1) in $bin, cache $(du -sh "$cache/go" | cut -f1) in $cache/go" >&2
echo "$bin"
