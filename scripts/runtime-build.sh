#!/usr/bin/env bash
# Builds the container runtime nodelet's rig runs from the upstream Go modules pinned under kube/: containerd,
# containerd-shim-runc-v2 and ctr (kube/containerd) and runc with seccomp (kube/runc), into a cache outside the
# repository keyed by both versions:
#   ${NODELET_CACHE:-/var/cache/nodelet}/runtime/containerd-<version>-runc-<version>/bin
# with the module and build caches under ${NODELET_CACHE}/go. A second run finds the binaries and builds nothing.
# Every binary is static (containerd's and runc's own static releases are built so), so the same files run in the VM
# test's guest. Prints the bin directory as its last line; progress goes to stderr.
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")/.."
repo=$PWD

tag=runtime-build
. "$repo/scripts/go-env.sh"
. "$repo/scripts/kube-lib.sh"

required() { awk -v m="$2" '($1 == m && $2 ~ /^v/) { print $2 } ($1 == "require" && $2 == m) { print $3 }' "$1"; }
containerd_module=github.com/containerd/containerd/v2
runc_module=github.com/opencontainers/runc
containerd_version=$(required kube/containerd/go.mod $containerd_module)
runc_version=$(required kube/runc/go.mod $runc_module)
if [ -z "$containerd_version" ] || [ -z "$runc_version" ]; then
  echo "runtime-build: kube/containerd/go.mod or kube/runc/go.mod does not require $containerd_module / $runc_module" >&2
  exit 1
fi
bin=$cache/runtime/containerd-$containerd_version-runc-$runc_version/bin
names=(containerd containerd-shim-runc-v2 ctr runc)

stamp=$({ cat kube/containerd/go.mod kube/containerd/go.sum kube/runc/go.mod kube/runc/go.sum "$script" scripts/go-env.sh scripts/kube-lib.sh; "$go" version; } | sha256sum | cut -d' ' -f1)
if up_to_date_or_lock "containerd $containerd_version and runc $runc_version are" "$bin" "$cache/runtime/.build.lock" "$stamp" "${names[@]}"; then exit 0; fi

# runc links libseccomp (its seccomp build tag) statically: the archive is in libseccomp-dev.
log() { printf '%s: %s\n' "$tag" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
. "$repo/scripts/common.sh"
ensure_debian_packages gcc libc6-dev libseccomp-dev pkg-config

log "building containerd $containerd_version and runc $runc_version with $("$go" version | cut -d' ' -f3) into $bin"
downloads=$(($(download_modules "$repo/kube/containerd" "$containerd_module/cmd/containerd" "$containerd_module/cmd/containerd-shim-runc-v2" "$containerd_module/cmd/ctr") + $(download_modules "$repo/kube/runc" "$runc_module")))
log "modules ready after $(elapsed) ($downloads downloaded)"

out=$bin.building
rm -rf "$out"
mkdir -p "$out"
# As containerd's Makefile with STATIC=1: its version package stamped (the proxy carries no commit), the shim without
# cgo and gRPC. The module's own version string is what `containerd --version` and CRI's Version report.
pkg=$containerd_module
cflags="-X $pkg/version.Version=$containerd_version -X $pkg/version.Package=$pkg"
(
  cd "$repo/kube/containerd"
  "$go" build -trimpath -tags "urfave_cli_no_docs osusergo netgo static_build" -ldflags "-s -w $cflags" -o "$out/" "$pkg/cmd/containerd" "$pkg/cmd/ctr"
  "$go" build -trimpath -tags "urfave_cli_no_docs osusergo netgo static_build no_grpc" -ldflags "-s -w $cflags" -o "$out/" "$pkg/cmd/containerd-shim-runc-v2"
) &
containerd_build=$!
# As runc's `make static`, less libpathrs (a Rust library Debian does not package; runc falls back to its Go path
# resolution): cgo for nsenter and libseccomp, static-pie.
runc_status=0
(
  cd "$repo/kube/runc"
  CGO_ENABLED=1 "$go" build -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -X main.gitCommit=$runc_version -linkmode external -extldflags -static-pie" -o "$out/runc" "$runc_module"
) || runc_status=$?
containerd_status=0
wait "$containerd_build" || containerd_status=$?
if [ "$containerd_status" != 0 ] || [ "$runc_status" != 0 ]; then
  die "go build failed after $(elapsed) (containerd: exit $containerd_status, runc: exit $runc_status)"
fi
for n in "${names[@]}"; do [ -x "$out/$n" ] || die "$n was not built"; done
echo "$stamp" >"$out/.stamp"
rm -rf "$bin"
mv "$out" "$bin"
log "built ${names[*]} in $(elapsed): $(du -sh "$bin" | cut -f1) in $bin"
echo "$bin"
