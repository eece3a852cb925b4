#!/usr/bin/env bash
# runtime.sh: the runtime rig — installs, configures, starts and tears down nodelet's own containerd, its CNI bin dir and local images.
#
# Usage: bash scripts/runtime.sh up | down [--purge] | describe | addon-images | e2e-images
#   describe:     the instance's CRI endpoint, pod bridge, networks, CNI socket and the agent's CNI directories, as JSON
#                 (empty where the instance has none): what a program driving the instance reads instead of copying.
#   e2e-images:   builds (scripts/e2e-build.sh) and imports the images of Kubernetes' e2e suite that can be made here,
#                 under their upstream names (see README "Conformance"). Needs the instance's containerd up.
#   addon-images: builds (scripts/kube-build.sh, scripts/addons-build.sh) and imports the images of the cluster addons
#                 under their upstream names: registry.k8s.io/kube-proxy:<k8s version> and
#                 registry.k8s.io/coredns/coredns:<version>. Needs the instance's containerd up.
#   NODELET_RUNTIME_INSTANCE=main  (default) the containerd the agent talks to; its CNI conflist names the nodelet shim.
#   NODELET_RUNTIME_INSTANCE=floor an independent containerd for the benchmark's "raw CRI floor": every path differs and its
#                                  CNI conflist is a plain reference chain (bridge + host-local + portmap) containerd runs itself.
#   NODELET_RUNTIME_INSTANCE=kubelet  a third one, the same as the floor's on its own bridge and pod subnet, for the real
#                                  kubelet the benchmark runs as nodelet's peer.
#   NODELET_RUNTIME_INSTANCE=conformance  the node of `npm run conformance`: the shim conflist like main's with a socket,
#                                  bridge and networks of its own (nodelet's own network in net.d-agent/), and every
#                                  registry sent to loopback (certs.d/_default/hosts.toml): nothing is pulled from outside.
#   NODELET_CGROUP_DRIVER=cgroupfs (default) | systemd  the cgroup driver runc uses (SystemdCgroup); nodelet's
#                                  cgroupDriver must match it.
# Where systemd is PID 1 and the unit nodelet-containerd[-INSTANCE].service exists (vagrant/provision.sh installs it),
# containerd runs as that unit: systemd starts, restarts and stops it. Elsewhere this script starts it itself.
# Idempotent: `up` only does what is missing; `down` without anything running is a no-op.
# Progress goes to stderr; `up` prints the CRI endpoint as its only stdout line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=scripts/common.sh
source "$REPO/scripts/common.sh"
INSTANCE=${NODELET_RUNTIME_INSTANCE:-main}

case "$INSTANCE" in
  main)
    SUFFIX=""
    CNI_BIN=/opt/nodelet/cni/bin
    BRIDGE=nodelet0
    # Network names whose host-side state (host-local reservations, iptables rules, result cache) belongs to this
    # instance: the shim conflist containerd runs, and the agent's own bridge network behind the shim.
    NETWORKS=(nodelet nodelet-bridge)
    CNI_SOCKET=/run/nodelet/cni.sock
    ;;
  floor)
    SUFFIX="-floor"
    CNI_BIN=/opt/nodelet/cni-floor/bin
    BRIDGE=nodelet-floor0
    NETWORKS=(nodelet-floor)
    SUBNET=10.98.0.0/24
    ;;
  kubelet)
    SUFFIX="-kubelet"
    CNI_BIN=/opt/nodelet/cni-kubelet/bin
    BRIDGE=nodelet-kube0
    NETWORKS=(nodelet-kubelet)
    # Not the main instance's 10.99.0.0/24, the floor's 10.98.0.0/24, the integration tests' 10.97.x.0/24 or the control
    # plane's 10.96.0.0/16 and 10.244.0.0/16.
    SUBNET=10.95.0.0/24
    ;;
  conformance)
    # The node of `npm run conformance` (Kubernetes' e2e suite): nodelet behind the CNI shim as on the main instance,
    # with a socket, bridge and networks of its own, so a long run never meets the integration tests' pods.
    SUFFIX="-conformance"
    CNI_BIN=/opt/nodelet/cni-conformance/bin
    BRIDGE=nodelet-conf0
    NETWORKS=(nodelet-conformance nodelet-conformance-bridge)
    CNI_SOCKET=/run/nodelet/cni-conformance.sock
    # nodelet garbage-collects the cached networks it made that no live sandbox of its runtime owns: with a cache of
    # its own, the main instance's nodelet and this one never take each other's pods for garbage.
    AGENT_CNI_CACHE=/var/lib/nodelet/cni-conformance
    # The agent's network before the Node has its podCIDR (nodelet then takes the podCIDR): none of the other
    # instances' subnets, nor the e2e control plane's cluster CIDR (test/conformance/run.ts).
    SUBNET=10.94.0.0/24
    ;;
  *)
    echo "runtime: unknown NODELET_RUNTIME_INSTANCE '$INSTANCE' (expected main, floor, kubelet or conformance)" >&2
    exit 2
    ;;
esac

CGROUP_DRIVER=${NODELET_CGROUP_DRIVER:-cgroupfs}
case "$CGROUP_DRIVER" in
  cgroupfs) SYSTEMD_CGROUP=false ;;
  systemd) SYSTEMD_CGROUP=true ;;
  *)
    echo "runtime: unknown NODELET_CGROUP_DRIVER '$CGROUP_DRIVER' (expected cgroupfs or systemd)" >&2
    exit 2
    ;;
esac
UNIT=nodelet-containerd$SUFFIX.service

CONF_DIR=/etc/nodelet/containerd$SUFFIX
CONFIG=$CONF_DIR/config.toml
NET_DIR=$CONF_DIR/net.d
# The conformance instance's agent network (nodelet's --cni-conf-dir).
AGENT_NET_DIR=$CONF_DIR/net.d-agent
# containerd's registry host configuration (a <host:port>/hosts.toml per registry), as a node trusting a private
# registry's CA is set up; the tests write theirs here.
CERTS_DIR=$CONF_DIR/certs.d
ROOT=/var/lib/nodelet/containerd$SUFFIX
STATE=/run/nodelet/containerd$SUFFIX
SOCK=$STATE/containerd.sock
PIDFILE=/run/nodelet/containerd$SUFFIX.pid
LOG=/var/log/nodelet/containerd$SUFFIX.log
LOCKFILE=/run/nodelet/runtime$SUFFIX.lock
IMAGES_DIR=/var/lib/nodelet/images
NETNS_DIR=/var/run/netns
CNI_DATA=/var/lib/cni
# Where nodelet caches the results of the networks it attaches (its --cni-cache-dir).
AGENT_CNI_CACHE=${AGENT_CNI_CACHE:-$CNI_DATA}
# The agent's --spawn-helper default.
SPAWN_HELPER=/opt/nodelet/bin/nodelet-spawn

PAUSE_IMAGE=localhost/nodelet/pause:1.0
BUSYBOX_IMAGE=localhost/nodelet/busybox:1.35
IMAGE_PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Beyond the runtime: openssl (the agent's self-signed kubelet API certificate, the control plane's PKI), ca-certificates
# (Go fetches the Kubernetes modules over HTTPS) and procps (pgrep): none is in a minimal Debian 12. What only the tests
# use is installed by scripts/test.sh: a node (the VM test's guest has no network) needs none of it.
PACKAGES=(containernetworking-plugins busybox-static iptables iproute2 gcc libc6-dev openssl ca-certificates procps)

if [[ $INSTANCE == main ]]; then TAG="runtime"; else TAG="runtime($INSTANCE)"; fi
# The instances whose containerd hands networking to a nodelet agent through the CNI shim.
has_agent() { [[ $INSTANCE == main || $INSTANCE == conformance ]]; }
log() { printf '%s: %s\n' "$TAG" "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

ctr_() { timeout 60 ctr -a "$SOCK" --connect-timeout 5s "$@"; }

socket_answers() { timeout 10 ctr -a "$SOCK" --timeout 5s version >/dev/null 2>&1; }

# Command lines of all processes as "pid arg0 arg1 ... " lines (builtins only: no fork per process).
process_table() {
  local f argv
  for f in /proc/[0-9]*/cmdline; do
    mapfile -d '' argv 2>/dev/null <"$f" || continue
    ((${#argv[@]})) || continue
    f=${f#/proc/}
    printf '%s %s \n' "${f%/cmdline}" "${argv[*]}"
  done
}

# The containerd serving this instance, found by its exact command line, so a stale pid file never points us at a
# recycled pid or at the other instance.
containerd_pid() {
  local pid rest
  while read -r pid rest; do
    [[ "$rest " == *"containerd --config $CONFIG " && ${rest%% *} == *containerd ]] && {
      echo "$pid"
      return 0
    }
  done < <(process_table)
  return 1
}

# Shims keep running when containerd dies; they carry the instance's socket address on their command line.
shim_pids() {
  local pid rest
  while read -r pid rest; do
    [[ "$rest " == *containerd-shim*" -address $SOCK "* ]] && echo "$pid"
  done < <(process_table)
  return 0
}

take_lock() {
  mkdir -p /run/nodelet
  exec 9>"$LOCKFILE"
  flock -w 300 9 || die "another runtime.sh for instance $INSTANCE holds $LOCKFILE"
}

# Writes $2 to $1 only when the content differs; returns 0 when it changed the file.
write_if_changed() {
  local path=$1 content=$2
  if [[ -f $path ]] && [[ "$(cat "$path")" == "$content" ]]; then return 1; fi
  mkdir -p "$(dirname "$path")"
  printf '%s\n' "$content" >"$path.tmp.$$"
  mv -f "$path.tmp.$$" "$path"
  return 0
}

# ---------------------------------------------------------------------------------------------------------------- up

ensure_packages() { ensure_debian_packages "${PACKAGES[@]}"; }

# The container runtime: containerd 2 and runc at the versions kube/containerd and kube/runc pin, built from their Go
# modules (scripts/runtime-build.sh) and installed into $RUNTIME_PREFIX, as their release archives install. Where they
# are installed at those versions already (a VM guest's image carries them), nothing is built.
RUNTIME_PREFIX=/usr/local/bin
RUNTIME_PROGRAMS=(containerd containerd-shim-runc-v2 ctr runc)
pinned_version() { awk -v m="$2" '($1 == m && $2 ~ /^v/) { print $2 } ($1 == "require" && $2 == m) { print $3 }' "$REPO/kube/$1/go.mod"; }
installed_versions() {
  "$RUNTIME_PREFIX/containerd" --version 2>/dev/null | awk '{ print $3 }'
  "$RUNTIME_PREFIX/runc" --version 2>/dev/null | awk 'NR == 1 { print "v" $3 }'
}
all_installed() {
  local p
  for p in "${RUNTIME_PROGRAMS[@]}"; do [[ -x $RUNTIME_PREFIX/$p ]] || return 1; done
}
ensure_runtime() {
  local want bin p
  want=$(printf '%s\n' "$(pinned_version containerd github.com/containerd/containerd/v2)" "$(pinned_version runc github.com/opencontainers/runc)")
  if [[ "$(installed_versions)" == "$want" ]] && all_installed; then return 0; fi
  bin=$(bash "$REPO/scripts/runtime-build.sh" | tail -n 1) || die "building containerd and runc failed (scripts/runtime-build.sh)"
  log "installing ${RUNTIME_PROGRAMS[*]} from $bin into $RUNTIME_PREFIX..."
  for p in "${RUNTIME_PROGRAMS[@]}"; do
    # A rename: a running containerd or shim keeps its old file.
    install -m 755 "$bin/$p" "$RUNTIME_PREFIX/.$p.new" && mv -f "$RUNTIME_PREFIX/.$p.new" "$RUNTIME_PREFIX/$p"
  done
  [[ "$(installed_versions)" == "$want" ]] || die "installed containerd/runc report $(installed_versions | tr '\n' ' ')instead of $(echo "$want" | tr '\n' ' ')"
}

# overlayfs is containerd's default and much faster than native (which copies every layer per container); only fall
# back when the kernel/filesystem under the root dir really cannot mount it.
choose_snapshotter() {
  mkdir -p /var/lib/nodelet
  local d
  d=$(mktemp -d /var/lib/nodelet/.overlay-probe.XXXXXX)
  mkdir -p "$d/lower" "$d/upper" "$d/work" "$d/merged"
  if mount -t overlay overlay -o "lowerdir=$d/lower,upperdir=$d/upper,workdir=$d/work" "$d/merged" 2>/dev/null; then
    umount "$d/merged"
    SNAPSHOTTER=overlayfs
  else
    SNAPSHOTTER=native
    log "WARNING: overlayfs cannot be mounted under /var/lib/nodelet; falling back to the native snapshotter"
  fi
  rm -rf "$d"
}

containerd_config() {
  cat <<EOF
# nodelet's own containerd ($INSTANCE instance) — written by scripts/runtime.sh; edits are overwritten.
# Version 4, containerd 2.4's own (version 3's layout of the CRI plugins; a version 3 file is migrated at every start).
version = 4
root = "$ROOT"
state = "$STATE"
oom_score = 0
# Snapshotters that cannot work on this kind of machine, and NRI (its socket, /var/run/nri/nri.sock, would be shared by
# every instance); disabled so the log stays free of their load errors.
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.nri.v1.nri",
]

[debug]
  level = "info"

[plugins]
  # Version 4 serves its sockets from these plugins (version 3's [grpc], [ttrpc] and [debug] addresses).
  [plugins.'io.containerd.server.v1.grpc']
    address = "$SOCK"

  [plugins.'io.containerd.server.v1.ttrpc']
    address = "$STATE/containerd.sock.ttrpc"

  [plugins.'io.containerd.server.v1.debug']
    address = "$STATE/debug.sock"

  [plugins.'io.containerd.internal.v1.opt']
    path = "$ROOT/opt"

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "$SNAPSHOTTER"

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$PAUSE_IMAGE"

    # Registries are configured per host (certs.d/<host:port>/hosts.toml: CA, auth-free mirrors), read at each pull.
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "$CERTS_DIR"

  [plugins.'io.containerd.cri.v1.runtime']
    # runc cannot lower oom_score_adj on these machines; without this every sandbox fails to start.
    restrict_oom_score_adj = true

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          # NODELET_CGROUP_DRIVER: cgroupfs unless systemd manages the cgroups (nodelet's cgroupDriver must match).
          SystemdCgroup = $SYSTEMD_CGROUP
          # Per-instance runc state, so both instances' containers are kept apart and removed with the state dir.
          Root = "$STATE/runc"

    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["$CNI_BIN"]
      conf_dir = "$NET_DIR"
      max_conf_num = 1

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_tls_streaming = false
    disable_tcp_service = true
EOF
}

# containerd's network on the instances with an agent: the shim, which hands each ADD/DEL to the agent's socket.
shim_conflist() {
  printf '{"cniVersion":"1.0.0","name":"%s","plugins":[{"type":"nodelet-cni","agentSocket":"%s","localExec":"%s","capabilities":{"portMappings":true}}]}\n' \
    "${NETWORKS[0]}" "$CNI_SOCKET" "$CNI_BIN/nodelet-cni-local"
}

# The floor and kubelet instances: containerd drives the reference plugins directly. With isGateway the bridge gets the
# subnet's .1, so host->pod traffic stays on the bridge (no forwarding needed); the bridge plugin itself turns on
# net.ipv4.ip_forward for isGateway.
# reference_conflist NAME [HAIRPIN_LINE]
reference_conflist() {
  cat <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$1",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,${2:+
      $2}
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$SUBNET" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

write_configs() {
  log "writing containerd config $CONFIG (snapshotter $SNAPSHOTTER)..."
  CONFIG_CHANGED=0
  if write_if_changed "$CONFIG" "$(containerd_config)"; then CONFIG_CHANGED=1; fi
  mkdir -p "$NET_DIR" "$CERTS_DIR"
  local name=10-${NETWORKS[0]}.conflist content
  if ! has_agent; then
    content=$(reference_conflist "${NETWORKS[0]}")
  else
    content=$(shim_conflist)
  fi
  if [[ $INSTANCE == conformance ]]; then
    # The agent's own network (its --cni-conf-dir), as cni-conf/ is the main instance's.
    mkdir -p "$AGENT_NET_DIR"
    find "$AGENT_NET_DIR" -mindepth 1 -maxdepth 1 ! -name "10-${NETWORKS[1]}.conflist" -exec rm -rf {} +
    write_if_changed "$AGENT_NET_DIR/10-${NETWORKS[1]}.conflist" "$(reference_conflist "${NETWORKS[1]}" '"hairpinMode": true,')" || true
    # Nothing is pulled from outside this machine: every registry without a host configuration of its own goes to
    # loopback port 9, where nothing listens, so a pull fails at once (containerd >= 1.6.10 reads _default).
    write_if_changed "$CERTS_DIR/_default/hosts.toml" "$(printf '%s\n' \
      '# written by nodelet scripts/runtime.sh: every registry is sent to loopback, nothing is pulled from outside' \
      'server = "http://127.0.0.1:9"' '' '[host."http://127.0.0.1:9"]' '  capabilities = ["pull", "resolve"]')" || true
  fi
  # containerd uses the first conflist in conf_dir: keep exactly ours there.
  find "$NET_DIR" -mindepth 1 -maxdepth 1 ! -name "$name" -exec rm -rf {} +
  write_if_changed "$NET_DIR/$name" "$content" || true
}

# compile_c SRC BIN WHAT: (re)builds BIN from the C file SRC when SRC is newer or differs from what was compiled last (a
# checkout can carry older mtimes).
compile_c() {
  local src=$1 bin=$2 what=$3 src_sha flags=(-O2 -Wall -static)
  # Static: no dynamic loader at each start (the CNI shim runs twice per pod) and the spawn helper's RSS ~0.4 MB less.
  # The flags are part of the key, so a binary built with others is rebuilt.
  src_sha="$(sha256_of "$src") ${flags[*]}"
  [[ -x $bin && ! $src -nt $bin && "$(cat "$bin.src-sha256" 2>/dev/null)" == "$src_sha" ]] && return 0
  log "compiling $what $src..."
  mkdir -p "$(dirname "$bin")"
  gcc "${flags[@]}" -o "$bin.tmp.$$" "$src" >&2 || {
    rm -f "$bin.tmp.$$"
    die "compiling $src failed"
  }
  # Rename so nothing ever executes a half-written binary.
  mv -f "$bin.tmp.$$" "$bin"
  echo "$src_sha" >"$bin.src-sha256"
}

ensure_cni_bin() {
  log "populating CNI bin dir $CNI_BIN..."
  mkdir -p "$CNI_BIN"
  local p
  for p in /usr/lib/cni/*; do
    [[ -x $p ]] || continue
    [[ "$(readlink "$CNI_BIN/${p##*/}" 2>/dev/null)" == "$p" ]] || ln -sfn "$p" "$CNI_BIN/${p##*/}"
  done
  # Drop symlinks left dangling by a plugin package change.
  find "$CNI_BIN" -maxdepth 1 -xtype l -delete
  has_agent || return 0

  compile_c "$REPO/src/cni/shim/nodelet-cni.c" "$CNI_BIN/nodelet-cni" "CNI shim"

  local wrapper
  wrapper=$(printf '#!/bin/sh\n# nodelet-cni-local: CNI DEL fallback the shim execs when the agent is unreachable (written by scripts/runtime.sh).\n%sexec %s %s "$@"' \
    "$([[ $AGENT_CNI_CACHE == "$CNI_DATA" ]] || echo "NODELET_CNI_CACHE_DIR=$AGENT_CNI_CACHE ")" "$REPO/node_modules/.bin/node" "$REPO/dist/src/cni/local-del.js")
  write_if_changed "$CNI_BIN/nodelet-cni-local" "$wrapper" || true
  chmod 755 "$CNI_BIN/nodelet-cni-local"
}

# containerd as a systemd unit (see the header).
systemd_unit() { [[ -d /run/systemd/system ]] && systemctl cat "$UNIT" >/dev/null 2>&1; }

# Waits for the socket of the containerd process $1 (or of the unit when $1 is empty) to answer.
wait_containerd() {
  local starter=$1 i
  for ((i = 0; i < 300; i++)); do
    if socket_answers; then break; fi
    if [[ -n $starter ]] && ! kill -0 "$starter" 2>/dev/null; then
      tail -n 30 "$LOG" >&2 || true
      die "containerd exited during start-up (log above, full log $LOG)"
    fi
    sleep 0.1
  done
  if ! socket_answers; then
    if [[ -z $starter ]]; then journalctl -u "$UNIT" -n 30 --no-pager >&2 || true; else tail -n 30 "$LOG" >&2 || true; fi
    die "containerd socket $SOCK did not answer within 30 s"
  fi
}

start_containerd() {
  local pid
  if systemd_unit; then
    mkdir -p "$STATE" "$ROOT"
    if ((CONFIG_CHANGED)); then
      log "config changed; restarting $UNIT..."
      systemctl restart "$UNIT"
    else
      systemctl start "$UNIT"
    fi
    wait_containerd ""
    pid=$(containerd_pid) || die "containerd answers on $SOCK but its process was not found"
    echo "$pid" >"$PIDFILE"
    log "containerd up as $UNIT (pid $pid)"
    return
  fi
  if pid=$(containerd_pid) && socket_answers; then
    if ((CONFIG_CHANGED)); then
      log "config changed; restarting containerd (pid $pid)..."
      stop_containerd "$pid"
    else
      echo "$pid" >"$PIDFILE"
      log "containerd already running (pid $pid)"
      return
    fi
  elif pid=$(containerd_pid); then
    # Alive but not answering: a hung or half-started daemon; replace it.
    log "containerd pid $pid does not answer on $SOCK; restarting it..."
    stop_containerd "$pid"
  fi

  log "starting containerd (log $LOG)..."
  mkdir -p "$STATE" "$ROOT" "$(dirname "$LOG")"
  rm -f "$SOCK"
  (
    # Keep no fd of our caller (npm/Jest pipes, our lock) open in the daemon, or callers waiting for EOF would hang.
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if ((fd > 2 && fd != 255)); then eval "exec $fd>&-"; fi
    done
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    echo "---- $(date -u +%FT%TZ) runtime.sh starting containerd ($INSTANCE)" >>"$LOG"
    # setsid: own session, so the daemon outlives the calling shell/test runner; clean env: no npm_* leaking into shims.
    exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      setsid nohup containerd --config "$CONFIG" </dev/null >>"$LOG" 2>&1
  ) &
  wait_containerd $!
  pid=$(containerd_pid) || die "containerd answers on $SOCK but its process was not found"
  echo "$pid" >"$PIDFILE"
  log "containerd up (pid $pid)"
}

check_cri_plugin() {
  local line
  line=$(ctr_ plugins ls 2>/dev/null | awk '$1 == "io.containerd.grpc.v1" && $2 == "cri"') || true
  if [[ $line != *" ok"* ]]; then
    grep -E 'failed to load plugin|io.containerd.grpc.v1.cri' "$LOG" | tail -n 20 >&2 || true
    die "containerd's CRI plugin did not load (${line:-not listed}); see $LOG"
  fi
  line=$(ctr_ plugins ls 2>/dev/null | awk -v s="$SNAPSHOTTER" '$1 == "io.containerd.snapshotter.v1" && $2 == s') || true
  [[ $line == *" ok"* ]] || die "snapshotter $SNAPSHOTTER is not usable in containerd (${line:-not listed}); see $LOG"
}

oci_arch() {
  case "$(dpkg --print-architecture)" in
    amd64) echo amd64 ;;
    arm64) echo arm64 ;;
    armhf) echo arm ;;
    i386) echo 386 ;;
    *) dpkg --print-architecture ;;
  esac
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Deterministic tar of a directory's content: same inputs, same bytes, same digests.
det_tar() { tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -C "$1" -cf "$2" .; }

populate_pause() {
  local rootfs=$1 work=$2
  gcc -static -O2 -Wall -o "$work/pause" "$REPO/images/pause/pause.c" >&2
  strip "$work/pause" 2>/dev/null || true
  install -m 755 "$work/pause" "$rootfs/pause"
}

populate_busybox() {
  local rootfs=$1 a
  mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/root" "$rootfs/tmp" "$rootfs/var/www" \
    "$rootfs/dev" "$rootfs/proc" "$rootfs/sys"
  chmod 1777 "$rootfs/tmp"
  chmod 700 "$rootfs/root"
  install -m 755 /bin/busybox "$rootfs/bin/busybox"
  for a in $(/bin/busybox --list); do
    [[ $a == busybox || $a == */* ]] && continue
    ln -s busybox "$rootfs/bin/$a"
  done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' >"$rootfs/etc/group"
  chmod 644 "$rootfs/etc/passwd" "$rootfs/etc/group"
}

# build_image NAME POPULATE_FN CONFIG_JSON_FRAGMENT INPUT_FILE...
# Builds an OCI image layout tarball under $IMAGES_DIR unless one built from the same inputs (files, tools, recipe)
# exists; sets IMAGE_TAR and IMAGE_DIGEST (the manifest digest, which is what containerd reports for the image).
build_image() {
  local name=$1 populate=$2 cfg=$3
  shift 3
  local slug=${name//[\/:]/_}
  local tarball=$IMAGES_DIR/$slug.tar keyfile=$IMAGES_DIR/$slug.key digestfile=$IMAGES_DIR/$slug.digest
  local key
  key=$({
    printf '%s\n' "$name" "$cfg" "$(oci_arch)" "$(gcc -dumpfullversion 2>/dev/null)" \
      "$(dpkg-query -W -f='${Version}' libc6-dev 2>/dev/null)"
    declare -f "$populate" build_image det_tar
    cat "$@"
  } | sha256sum | cut -d' ' -f1)
  IMAGE_TAR=$tarball
  if [[ -f $tarball && -f $digestfile && "$(cat "$keyfile" 2>/dev/null)" == "$key" ]]; then
    IMAGE_DIGEST=$(cat "$digestfile")
    return
  fi

  log "building image $name..."
  mkdir -p "$IMAGES_DIR"
  local work
  rm -rf "$IMAGES_DIR/.build-$slug."*
  work=$(mktemp -d "$IMAGES_DIR/.build-$slug.XXXXXX")
  mkdir -p "$work/rootfs" "$work/layout/blobs/sha256"
  chmod 755 "$work/rootfs"
  "$populate" "$work/rootfs" "$work"

  local blobs=$work/layout/blobs/sha256 arch layer_sha layer_size config config_sha manifest manifest_sha
  arch=$(oci_arch)
  det_tar "$work/rootfs" "$work/layer.tar"
  layer_sha=$(sha256_of "$work/layer.tar")
  layer_size=$(stat -c %s "$work/layer.tar")
  mv "$work/layer.tar" "$blobs/$layer_sha"

  config=$(printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"nodelet scripts/runtime.sh"}]}' \
    "$arch" "$cfg" "$layer_sha")
  printf '%s' "$config" >"$work/config.json"
  config_sha=$(sha256_of "$work/config.json")
  mv "$work/config.json" "$blobs/$config_sha"

  manifest=$(printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%d}]}' \
    "$config_sha" "${#config}" "$layer_sha" "$layer_size")
  printf '%s' "$manifest" >"$work/manifest.json"
  manifest_sha=$(sha256_of "$work/manifest.json")
  mv "$work/manifest.json" "$blobs/$manifest_sha"

  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%d,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest_sha" "${#manifest}" "$arch" "$name" "${name##*:}" >"$work/layout/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"
  chmod -R a+rX "$work/layout"
  det_tar "$work/layout" "$tarball.tmp"
  mv -f "$tarball.tmp" "$tarball"
  echo "sha256:$manifest_sha" >"$digestfile"
  echo "$key" >"$keyfile"
  rm -rf "$work"
  IMAGE_DIGEST=sha256:$manifest_sha
}

# Imports IMAGE_TAR into the k8s.io namespace unless the image with the same digest is already there; returns 0
# when it imported.
import_image() {
  local name=$1 current
  current=$(ctr_ -n k8s.io images ls 2>/dev/null | awk -v n="$name" '$1 == n { print $3 }')
  if [[ $current == "$IMAGE_DIGEST" ]]; then
    log "image $name present ($IMAGE_DIGEST)"
    add_digest_reference "$name"
    return 1
  fi
  log "importing image $name ($IMAGE_DIGEST)..."
  ctr_ -n k8s.io images import --snapshotter "$SNAPSHOTTER" "$IMAGE_TAR" >&2 ||
    die "importing $IMAGE_TAR into $SOCK failed"
  current=$(ctr_ -n k8s.io images ls 2>/dev/null | awk -v n="$name" '$1 == n { print $3 }')
  [[ $current == "$IMAGE_DIGEST" ]] || die "after import, $name has digest '${current:-none}', expected $IMAGE_DIGEST"
  add_digest_reference "$name"
  return 0
}

# Names the image also by repository@digest, as a pull from a registry would: CRI then reports that digest
# reference as the image's repo digest, and nodelet (like kubelet) shows it as a container's imageID.
add_digest_reference() {
  local name=$1
  ctr_ -n k8s.io images tag --force "$name" "${name%:*}@$IMAGE_DIGEST" >/dev/null ||
    die "tagging $name as ${name%:*}@$IMAGE_DIGEST failed"
}

# Runs the busybox image once and the pause image once through runc, proving the images, snapshotter and runtime work.
verify_images() {
  log "verifying images with a test container..."
  local id=rigtest-$$ out
  # FIFOs and runc state inside the instance's state dir rather than ctr's defaults under /run/containerd.
  local run_opts=(--snapshotter "$SNAPSHOTTER" --fifo-dir "$STATE/fifo" --runc-root "$STATE/runc")
  # Only the container's output: on a cgroup v1 host ctr warns on stderr that containerd 2.2 deprecated cgroup v1.
  local err=$STATE/verify.err
  out=$(ctr_ -n k8s.io run --rm "${run_opts[@]}" "$BUSYBOX_IMAGE" "$id" echo ok 2>"$err") || true
  if [[ $out != ok ]]; then
    out+=$(cat "$err")
    ctr_ -n k8s.io tasks rm -f "$id" >/dev/null 2>&1 || true
    ctr_ -n k8s.io containers rm "$id" >/dev/null 2>&1 || true
    die "test container from $BUSYBOX_IMAGE did not print ok: $out"
  fi
  id=rigtest-pause-$$
  ctr_ -n k8s.io run -d "${run_opts[@]}" "$PAUSE_IMAGE" "$id" >/dev/null
  # pause is PID 1 of its namespace: a SIGTERM that comes before it has installed its handler is dropped, so it is sent
  # again every second.
  local i status=""
  for ((i = 0; i < 50; i++)); do
    if ((i % 10 == 0)); then ctr_ -n k8s.io tasks kill -s TERM "$id" >/dev/null 2>&1 || true; fi
    status=$(ctr_ -n k8s.io tasks ls 2>/dev/null | awk -v n="$id" '$1 == n { print $3 }')
    [[ $status == STOPPED ]] && break
    sleep 0.1
  done
  ctr_ -n k8s.io tasks rm -f "$id" >/dev/null 2>&1 || true
  ctr_ -n k8s.io containers rm "$id" >/dev/null 2>&1 || true
  [[ $status == STOPPED ]] || die "pause image did not stop on SIGTERM (status ${status:-unknown})"
}

ensure_images() {
  local imported=0
  build_image "$PAUSE_IMAGE" populate_pause '{"Entrypoint":["/pause"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' \
    "$REPO/images/pause/pause.c"
  if import_image "$PAUSE_IMAGE"; then imported=1; fi
  build_image "$BUSYBOX_IMAGE" populate_busybox '{"Cmd":["sh"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' /bin/busybox
  if import_image "$BUSYBOX_IMAGE"; then imported=1; fi
  if ((imported)) || [[ ! -f $STATE/images-verified ]]; then
    verify_images
    touch "$STATE/images-verified"
  fi
}

# The files of the host's iptables that an image needs: the xtables multi-binaries the host's iptables, iptables-save,
# iptables-restore and their ip6tables twins resolve to (nft or legacy, whatever the host uses, so rules made in the
# image are the ones the host's iptables-save shows), their extensions and the shared libraries of all of them.
iptables_files() {
  local cmd multi=() xt lib
  for cmd in "${IPTABLES_COMMANDS[@]}"; do multi+=("$(readlink -f "$(command -v "$cmd")")"); done
  mapfile -t multi < <(printf '%s\n' "${multi[@]}" | sort -u)
  lib=$(ldd "${multi[0]}" | awk '$1 ~ /^libxtables\./ { print $3 }')
  [[ -n $lib ]] || die "cannot find libxtables of ${multi[0]}"
  xt=$(dirname "$(realpath "$lib")")/xtables
  with_libraries "${multi[@]}" "$xt"/*.so
}

# with_libraries FILE...: the files and the shared libraries they load (as ldd resolves them, the loader included),
# once each: what an image needs to run a program of the host.
with_libraries() {
  local f
  printf '%s\n' "$@" | while read -r f; do
    echo "$f"
    ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
  done | sort -u
}

# copy_files ROOTFS FILE...: each file at its own path in the image (symlinks resolved).
copy_files() {
  local rootfs=$1 f
  shift
  for f in "$@"; do
    mkdir -p "$rootfs$(dirname "$f")"
    cp -L "$f" "$rootfs$f"
  done
}
IPTABLES_COMMANDS=(iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore)

# As upstream's kube-proxy image (distroless-iptables + /usr/local/bin/kube-proxy): kube-proxy runs iptables,
# iptables-save and iptables-restore (and the ip6tables ones) through exec; conntrack entries it clears over netlink.
populate_kube_proxy() {
  local rootfs=$1 f cmd
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/sbin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/run" "$rootfs/dev" "$rootfs/proc" "$rootfs/sys"
  chmod 1777 "$rootfs/tmp"
  install -m 755 "$KUBE_PROXY_BIN" "$rootfs/usr/local/bin/kube-proxy"
  # At the paths ldd names them (the loader's default directories), extensions where libxtables looks for them.
  copy_files "$rootfs" "${IMAGE_FILES[@]}"
  for cmd in "${IPTABLES_COMMANDS[@]}"; do
    ln -sf "$(basename "$(readlink -f "$(command -v "$cmd")")")" "$rootfs/usr/sbin/$cmd"
  done
  # Protocol names for `-p` (iptables looks them up).
  install -m 644 /etc/protocols "$rootfs/etc/protocols"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' >"$rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' >"$rootfs/etc/group"
}

# As upstream's CoreDNS image: the static binary as /coredns and its entrypoint. Unlike upstream's (user nonroot with a
# cap_net_bind_service file capability, which this builder's plain tar layers cannot carry) it runs as root; kubeadm's
# Deployment drops every capability but NET_BIND_SERVICE anyway.
populate_coredns() {
  local rootfs=$1
  mkdir -p "$rootfs/etc" "$rootfs/tmp" "$rootfs/dev" "$rootfs/proc" "$rootfs/sys"
  chmod 1777 "$rootfs/tmp"
  install -m 755 "$COREDNS_BIN" "$rootfs/coredns"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' >"$rootfs/etc/passwd"
  printf '%s\n' 'root:x:0:' >"$rootfs/etc/group"
}

cmd_addon_images() {
  take_lock
  socket_answers || die "containerd ($INSTANCE) does not answer on $SOCK: run 'bash scripts/runtime.sh up' first"
  choose_snapshotter
  local kube_bin version name addon_version bin
  kube_bin=$(bash "$REPO/scripts/kube-build.sh")
  version=$(basename "$(dirname "$kube_bin")")
  KUBE_PROXY_BIN=$kube_bin/kube-proxy
  mapfile -t IMAGE_FILES < <(iptables_files)
  build_image "registry.k8s.io/kube-proxy:$version" populate_kube_proxy '{"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' \
    "$KUBE_PROXY_BIN" "${IMAGE_FILES[@]}"
  import_image "registry.k8s.io/kube-proxy:$version" || true
  while read -r name addon_version bin; do
    case $name in
      coredns)
        COREDNS_BIN=$bin
        build_image "registry.k8s.io/coredns/coredns:$addon_version" populate_coredns '{"Entrypoint":["/coredns"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' "$bin"
        import_image "registry.k8s.io/coredns/coredns:$addon_version" || true
        ;;
    esac
  done < <(bash "$REPO/scripts/addons-build.sh")
}

# Kubernetes' e2e test images, as their Dockerfiles (k8s.io/kubernetes test/images/<name>) make them on top of the
# project's busybox userland rather than upstream's Alpine/Debian bases: what the tests run of them is the Go program.
# agnhost: /agnhost (and the agnhost-2 link the entrypoint tests use), /uploads, porter's test certificate and key
# (netexec --tls-cert-file /localhost.crt serves HTTPS with them), the image-defined user and group of the
# SupplementalGroups test, and the host's curl with its libraries (upstream's image has Alpine's; the lifecycle hook
# tests run `curl` in it).
populate_agnhost() {
  local rootfs=$1
  populate_busybox "$rootfs"
  copy_files "$rootfs" "${CURL_FILES[@]}"
  install -m 755 "$E2E_BIN/agnhost" "$rootfs/agnhost"
  ln -s agnhost "$rootfs/agnhost-2"
  install -m 644 "$AGNHOST_SRC/porter/localhost.crt" "$AGNHOST_SRC/porter/localhost.key" "$rootfs/"
  mkdir -p "$rootfs/uploads"
  echo 'user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh' >>"$rootfs/etc/passwd"
  printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' >>"$rootfs/etc/group"
}

# nonewprivs: nnp, setuid root, prints the effective uid it gets.
populate_nonewprivs() {
  local rootfs=$1
  populate_busybox "$rootfs"
  mkdir -p "$rootfs/usr/local/bin"
  install -m 4755 "$E2E_BIN/nnp" "$rootfs/usr/local/bin/nnp"
}

# etcd: the etcd scripts/kube-build.sh builds (kubeadm's version, not the image tag's 3.5.16) at upstream's path.
populate_etcd() {
  local rootfs=$1
  populate_busybox "$rootfs"
  mkdir -p "$rootfs/usr/local/bin"
  install -m 755 "$ETCD_BIN" "$rootfs/usr/local/bin/etcd"
}

cmd_e2e_images() {
  take_lock
  socket_answers || die "containerd ($INSTANCE) does not answer on $SOCK: run 'bash scripts/runtime.sh up' first"
  choose_snapshotter
  local kube_bin image images=() built=()
  E2E_BIN=$(bash "$REPO/scripts/e2e-build.sh")
  kube_bin=$(bash "$REPO/scripts/kube-build.sh")
  ETCD_BIN=$kube_bin/etcd
  ensure_debian_packages curl
  mapfile -t CURL_FILES < <(with_libraries "$(command -v curl)")
  # The agnhost source of the suite's version (its image's files beyond the program), in the module cache.
  AGNHOST_SRC=$(
    tag=runtime
    . "$REPO/scripts/go-env.sh"
    cd "$REPO/kube/e2e" && "$go" list -f '{{.Dir}}' k8s.io/kubernetes/test/images/agnhost
  )
  # The names and tags the suite of this version asks for.
  mapfile -t images < <("$E2E_BIN/e2e.test" --list-images 2>/dev/null | sort -u)
  ((${#images[@]})) || die "$E2E_BIN/e2e.test --list-images printed no image"
  local busybox_cfg='{"Cmd":["sh"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}'
  for image in "${images[@]}"; do
    case $image in
      registry.k8s.io/e2e-test-images/agnhost:*)
        build_image "$image" populate_agnhost '{"Entrypoint":["/agnhost"],"Cmd":["pause"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' \
          /bin/busybox "$E2E_BIN/agnhost" "$AGNHOST_SRC/porter/localhost.crt" "$AGNHOST_SRC/porter/localhost.key" "${CURL_FILES[@]}" ;;
      registry.k8s.io/e2e-test-images/busybox:*)
        build_image "$image" populate_busybox "$busybox_cfg" /bin/busybox ;;
      registry.k8s.io/e2e-test-images/nonroot:*)
        build_image "$image" populate_busybox '{"User":"1234","Cmd":["sh"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' /bin/busybox ;;
      registry.k8s.io/e2e-test-images/nonewprivs:*)
        build_image "$image" populate_nonewprivs '{"Cmd":["nnp"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' /bin/busybox "$E2E_BIN/nnp" ;;
      registry.k8s.io/pause:*)
        build_image "$image" populate_pause '{"Entrypoint":["/pause"],"Env":["'"$IMAGE_PATH_ENV"'"],"WorkingDir":"/"}' "$REPO/images/pause/pause.c" ;;
      registry.k8s.io/etcd:*)
        build_image "$image" populate_etcd "$busybox_cfg" /bin/busybox "$ETCD_BIN" ;;
      *) continue ;;
    esac
    import_image "$image" || true
    built+=("$image")
  done
  log "${#built[@]} of the suite's ${#images[@]} images are here; the others cannot be built on this machine (README \"Conformance\")"
  printf '%s\n' "${built[@]}"
}

cmd_up() {
  local t0=$SECONDS
  take_lock
  ensure_packages
  ensure_runtime
  choose_snapshotter
  write_configs
  ensure_cni_bin
  # The agent starts CNI plugins through this helper (see its source for why); the floor has no agent.
  if has_agent; then compile_c "$REPO/src/host/spawn-helper/nodelet-spawn.c" "$SPAWN_HELPER" "process spawn helper"; fi
  start_containerd
  check_cri_plugin
  ensure_images
  log "ready in $((SECONDS - t0)) s; CRI endpoint:"
  echo "unix://$SOCK"
}

# -------------------------------------------------------------------------------------------------------------- down

stop_containerd() {
  local pid=$1 i
  if systemd_unit; then
    systemctl stop "$UNIT"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "containerd pid $pid ignored SIGTERM for 15 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

# Removes every container (CRI sandboxes and app containers alike) from every namespace of this instance. Removing them
# through ctr runs no CNI DEL, so the netns files they reference are collected into REMOVED_NETNS for manual cleanup.
remove_containers() {
  local ns ids id
  for ns in $(ctr_ namespaces ls -q 2>/dev/null); do
    ids=$(ctr_ -n "$ns" containers ls -q 2>/dev/null) || continue
    [[ -n $ids ]] || continue
    log "removing $(wc -w <<<"$ids") containers in namespace $ns..."
    for id in $ids; do REMOVED_IDS+=("$id"); done
    # Only CRI sandboxes own a named netns (app containers join the sandbox's via /proc/<pid>/ns/net).
    for id in $(ctr_ -n "$ns" containers ls -q 'labels."io.cri-containerd.kind"==sandbox' 2>/dev/null); do
      while read -r path; do
        REMOVED_NETNS+=("$path")
      done < <(ctr_ -n "$ns" containers info "$id" 2>/dev/null |
        grep -oE '"(/var)?/run/netns/[^"]+"' | tr -d '"' | sort -u)
    done
    # One kill/rm pipeline per container, a few at a time: the benchmark can leave hundreds behind.
    printf '%s\n' $ids | xargs -r -P 8 -I{} sh -c '
      timeout 30 ctr -a "$1" -n "$2" tasks kill -s KILL "$3" >/dev/null 2>&1
      timeout 30 ctr -a "$1" -n "$2" tasks rm -f "$3" >/dev/null 2>&1
      timeout 30 ctr -a "$1" -n "$2" containers rm "$3" >/dev/null 2>&1 || true' _ "$SOCK" "$ns" {}
    ids=$(ctr_ -n "$ns" containers ls -q 2>/dev/null) || true
    [[ -z $ids ]] || log "WARNING: containers left in namespace $ns: $(echo $ids)"
  done
}

remove_netns() {
  local path
  for path in "${REMOVED_NETNS[@]}"; do
    path=$NETNS_DIR/${path##*/netns/}
    [[ -e $path ]] || continue
    log "removing netns $path"
    umount "$path" 2>/dev/null || umount -l "$path" 2>/dev/null || true
    rm -f "$path"
  done
}

remove_cni_state() {
  local net id
  for net in "${NETWORKS[@]}"; do
    if [[ -d $CNI_DATA/networks/$net ]]; then
      log "removing host-local reservations $CNI_DATA/networks/$net"
      rm -rf "${CNI_DATA:?}/networks/$net"
    fi
  done
  # libcni's result cache of the removed sandboxes: our networks plus the loopback network containerd adds itself.
  for net in "${NETWORKS[@]}" cni-loopback; do
    for id in "${REMOVED_IDS[@]}"; do
      rm -f "$CNI_DATA/results/$net-$id-"* "$AGENT_CNI_CACHE/results/$net-$id-"*
    done
  done
}

# iptables rules the bridge (ipMasq) and portmap plugins add carry a comment `name: "<network>" id: "<container>"`;
# delete those of this instance's networks and the per-container chains they jump to. Shared CNI-HOSTPORT-* chains stay.
sweep_iptables() {
  command -v iptables-save >/dev/null || return 0
  local table net rules chains script
  for table in nat filter; do
    rules=""
    for net in "${NETWORKS[@]}"; do
      rules+=$(iptables-save -t "$table" 2>/dev/null | grep -F -- "name: \\\"$net\\\" id:" | grep -E '^-A ' || true)
      rules+=$'\n'
    done
    rules=$(sed '/^$/d' <<<"$rules")
    [[ -n $rules ]] || continue
    chains=$(grep -oE -- '-j CNI-[A-Za-z0-9_-]+' <<<"$rules" | cut -d' ' -f2 | grep -v '^CNI-HOSTPORT-' | sort -u || true)
    log "removing $(wc -l <<<"$rules") leftover iptables rules from table $table"
    script="*$table"$'\n'$(sed 's/^-A /-D /' <<<"$rules")$'\n'
    for net in $chains; do script+="-F $net"$'\n'; done
    for net in $chains; do script+="-X $net"$'\n'; done
    script+="COMMIT"
    iptables-restore -w 10 --noflush <<<"$script" 2>/dev/null || log "WARNING: could not remove some iptables rules in $table"
  done
}

remove_links() {
  local veth
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    for veth in $(ip -o link show master "$BRIDGE" type veth 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
      ip link del "$veth" 2>/dev/null || true
    done
    log "deleting bridge $BRIDGE"
    ip link del "$BRIDGE" 2>/dev/null || true
  fi
}

unmount_under() {
  local dir=$1 mp
  # Deepest first; mountinfo field 5 is the mount point.
  for mp in $(awk -v d="$dir/" 'index($5, d) == 1 || $5 == substr(d, 1, length(d) - 1) { print $5 }' /proc/self/mountinfo | sort -r); do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || log "WARNING: cannot unmount $mp"
  done
}

cmd_down() {
  local purge=0
  [[ ${1:-} == --purge ]] && purge=1
  take_lock
  REMOVED_IDS=()
  REMOVED_NETNS=()
  local pid=""
  pid=$(containerd_pid) || pid=""

  if [[ -z $pid && ! -d $STATE && ! -f $PIDFILE ]]; then
    log "nothing running"
  else
    # Containers only disappear cleanly through containerd; if it died while shims/containers survive, start it to clean up.
    if [[ -z $pid || ! -S $SOCK ]] || ! socket_answers; then
      if [[ -f $CONFIG && -d $ROOT ]]; then
        log "containerd not answering; starting it to clean up..."
        CONFIG_CHANGED=0
        # In a subshell: if it cannot start, carry on with the cleanup that needs no containerd.
        if (start_containerd); then pid=$(containerd_pid) || pid=""; fi
      fi
    fi
    if [[ -n $pid ]] && socket_answers; then
      remove_containers
    fi
    remove_netns
    remove_cni_state
    sweep_iptables
    remove_links
    if [[ -n $pid ]]; then
      log "stopping containerd (pid $pid)..."
      stop_containerd "$pid"
    fi
    local shim
    for shim in $(shim_pids); do
      log "stopping leftover shim pid $shim"
      kill -KILL "$shim" 2>/dev/null || true
    done
    unmount_under "$STATE"
    unmount_under "$ROOT"
    rm -rf "$STATE" "$PIDFILE"
    local id
    for id in "${REMOVED_IDS[@]}"; do
      rm -rf "$ROOT/io.containerd.grpc.v1.cri/sandboxes/$id" "$ROOT/io.containerd.grpc.v1.cri/containers/$id"
    done
    log "stopped"
  fi

  if ((purge)); then
    log "purging $ROOT, $CONF_DIR, $CNI_BIN, $IMAGES_DIR, $LOG"
    unmount_under "$ROOT"
    rm -rf "$ROOT" "$CONF_DIR" "$CNI_BIN" "$IMAGES_DIR" "$LOG"
    if [[ $INSTANCE == main ]]; then rm -rf "$(dirname "$SPAWN_HELPER")"; fi
    rmdir "$(dirname "$CNI_BIN")" /opt/nodelet /etc/nodelet /var/lib/nodelet /var/log/nodelet 2>/dev/null || true
  fi
}

# The instance's settings a program driving it needs, as one JSON object on stdout (nothing is started).
cmd_describe() {
  local networks
  networks=$(printf '"%s",' "${NETWORKS[@]}")
  printf '{"criEndpoint":"unix://%s","bridge":"%s","networks":[%s],"cniSocket":"%s","agentCniConfDir":"%s","agentCniCacheDir":"%s"}\n' \
    "$SOCK" "$BRIDGE" "${networks%,}" "${CNI_SOCKET:-}" "$(if [[ $INSTANCE == conformance ]]; then echo "$AGENT_NET_DIR"; fi)" \
    "$(if has_agent; then echo "$AGENT_CNI_CACHE"; fi)"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down "${2:-}" ;;
  describe) cmd_describe ;;
  addon-images) cmd_addon_images ;;
  e2e-images) cmd_e2e_images ;;
  *)
    echo "usage: [NODELET_RUNTIME_INSTANCE=main|floor|kubelet|conformance] bash scripts/runtime.sh up | down [--purge] | describe | addon-images | e2e-images" >&2
    exit 2
    ;;
esac
