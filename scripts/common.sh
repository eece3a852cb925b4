# common.sh: sourced by scripts/runtime.sh and scripts/vm.sh (after `set -euo pipefail` and REPO): the environment they
# run in, and Debian package installation. The caller defines log and die.
umask 022
export LC_ALL=C
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

# ensure_debian_packages PACKAGE...: installs the missing ones with apt-get; apt's output is shown only when it fails.
ensure_debian_packages() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    log "packages present"
    return
  fi
  log "installing ${missing[*]}..."
  local out
  out=$(mktemp)
  if ! {
    DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
  } >"$out" 2>&1; then
    tail -n 40 "$out" >&2
    rm -f "$out"
    die "apt-get could not install ${missing[*]}"
  fi
  rm -f "$out"
}
