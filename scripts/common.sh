# common.sh: sourced by scripts/runtime.sh, scripts/vm.sh and scripts/test.sh (after `set -euo pipefail`): the environment they
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
  local out policy=/usr/sbin/policy-rc.d own_policy=0
  out=$(mktemp)
  # No package starts its service: the rig runs containerd itself, and docker-registry's init script would listen on
  # every interface (:5000). invoke-rc.d asks policy-rc.d; 101 = action forbidden. One already there is left alone.
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# written by nodelet scripts/common.sh during apt-get install; removed after it\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
  fi
  if ! {
    DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
  } >"$out" 2>&1; then
    tail -n 40 "$out" >&2
    rm -f "$out"
    ((own_policy)) && rm -f "$policy"
    die "apt-get could not install ${missing[*]}"
  fi
  rm -f "$out"
  ((own_policy)) && rm -f "$policy"
  return 0
}
