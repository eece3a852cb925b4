# kube-lib.sh: sourced by scripts/kube-build.sh, scripts/e2e-build.sh and scripts/addons-build.sh (after go-env.sh):
# building programs of upstream Go modules (k8s.io/kubernetes through a wrapper module) under kube/ into a cache
# directory stamped with what they were built from.

# The k8s.io/kubernetes version a wrapper module's go.mod requires.
k8s_version_of() {
  awk '($1 == "k8s.io/kubernetes" && $2 ~ /^v1\./) { print $2 } ($1 == "require" && $2 == "k8s.io/kubernetes") { print $3 }' "$1"
}

# Whether directory $1 holds stamp $2 and every program named after them.
stamped() {
  local dir=$1 stamp=$2 n
  shift 2
  [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ] || return 1
  for n in "$@"; do [ -x "$dir/$n" ] || return 1; done
}

# up_to_date_or_lock WHAT DIR LOCK STAMP PROGRAM...: when DIR is up to date, says so and prints DIR (status 0). Otherwise
# takes the build lock LOCK (fd 8, held until the caller exits) and checks again, as another run may have built it
# while this one waited: status 1 when the caller must build.
up_to_date_or_lock() {
  local what=$1 dir=$2 lock=$3 stamp=$4
  shift 4
  if ! stamped "$dir" "$stamp" "$@"; then
    mkdir -p "$(dirname "$lock")"
    exec 8>"$lock"
    flock 8
    stamped "$dir" "$stamp" "$@" || return 1
  fi
  echo "$tag: $what up to date in $dir" >&2
  echo "$dir"
}

build_start=$(date +%s)
elapsed() {
  local s=$(($(date +%s) - build_start))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# download_modules DIR GO-LIST-ARGS...: fetches the modules `go list -deps` needs in module DIR (a fresh machine needs the
# Go module proxy) and prints how many were downloaded.
download_modules() {
  local dir=$1 err other
  shift
  if ! err=$(cd "$dir" && "$go" list -deps "$@" 2>&1 >/dev/null); then
    echo "$err" >&2
    echo "$tag: could not get the modules of $dir/go.mod (a fresh machine needs the Go module proxy)" >&2
    return 1
  fi
  other=$(echo "$err" | grep -v '^go: downloading ' || true)
  if [ -n "$other" ]; then echo "$other" >&2; fi
  echo "$err" | grep -c '^go: downloading ' || true
}

# version_ldflags DIR VERSION: the linker flags stamping VERSION as Kubernetes' hack/lib/version.sh does (kubeadm and
# kubelet compare versions, the e2e suite reports it); the build date is the release's time from the module proxy, so a
# rebuild yields the same binaries.
version_ldflags() {
  local build_date minor p flags="-s -w"
  build_date=$(cd "$1" && "$go" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
  minor=${2#v1.}
  minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=$2 -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    flags+=" -X $p.gitCommit= -X $p.gitTreeState=archive -X $p.buildDate=$build_date"
  done
  echo "$flags"
}
