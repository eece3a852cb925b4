# go-env.sh: sourced by scripts/kube-build.sh, scripts/e2e-build.sh and scripts/addons-build.sh (after `set -euo
# pipefail`, with $tag naming the caller in messages): the Go toolchain as $go, and the build environment they share:
# module and build caches under ${NODELET_CACHE:-/var/cache/nodelet}/go, static binaries, go.sum authoritative, no
# toolchain download.
go=${GO:-}
if [ -z "$go" ]; then
  if command -v go >/dev/null 2>&1; then go=$(command -v go); elif [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go; fi
fi
if [ -z "$go" ] || ! "$go" version >/dev/null 2>&1; then
  echo "$tag: no Go toolchain found (not on PATH, not at /usr/local/go/bin/go)." >&2
  echo "$tag: Go >= 1.23 is part of this project's machine kind; install it there, then run this again." >&2
  exit 1
fi

cache=${NODELET_CACHE:-/var/cache/nodelet}
export GOMODCACHE=$cache/go/mod GOCACHE=$cache/go/build
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
