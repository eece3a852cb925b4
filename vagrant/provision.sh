#!/usr/bin/env bash
# provision.sh: installs nodelet on a Debian 13 (or 12) machine with systemd as PID 1 (the Vagrant box, the VM test's guest), as
# kubelet is installed: its containerd and nodelet as systemd units, the configuration at /var/lib/nodelet/config.yaml,
# extra flags in /etc/default/nodelet. Runs as root, from the project it installs (the unit runs nodelet from there).
#
# Usage: bash vagrant/provision.sh [--cgroup-driver cgroupfs|systemd] [--manifests DIR]
#   --cgroup-driver  containerd's (SystemdCgroup) and nodelet's cgroupDriver, kept equal (default systemd, as kubeadm configures kubelet)
#   --manifests DIR  static pods copied into the staticPodPath /etc/kubernetes/manifests (e.g. the project's examples/)
# Idempotent: a second run rewrites the units and configuration and restarts what changed.
set -euo pipefail
umask 022
export LC_ALL=C
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
DRIVER=systemd
MANIFESTS=""
while (($#)); do
  case $1 in
    --cgroup-driver) DRIVER=${2:?}; shift 2 ;;
    --manifests) MANIFESTS=${2:?}; shift 2 ;;
    *) echo "provision: unknown argument $1" >&2; exit 2 ;;
  esac
done
case $DRIVER in cgroupfs | systemd) ;; *) echo "provision: --cgroup-driver must be cgroupfs or systemd, not $DRIVER" >&2; exit 2 ;; esac
[[ -d /run/systemd/system ]] || { echo "provision: systemd is not PID 1 here; use scripts/runtime.sh and bin/nodelet.js directly" >&2; exit 1; }
log() { printf 'provision: %s\n' "$*" >&2; }

ROOT_DIR=/var/lib/nodelet
CONFIG=$ROOT_DIR/config.yaml
STATIC_POD_PATH=/etc/kubernetes/manifests
ENDPOINT=unix:///run/nodelet/containerd/containerd.sock

# containerd 2 and runc are not Debian's: scripts/runtime.sh runs the versions kube/containerd and kube/runc pin from
# /usr/local/bin. The VM test's image carries them there (built on its host); elsewhere (a Vagrant box) runtime.sh
# builds them from their Go modules (scripts/runtime-build.sh, a few minutes), which takes a Go at least as new as those
# modules' go lines: Debian's golang-go is older (1.24 in Debian 13, 1.19 in Debian 12) and no toolchain is downloaded.
# Checked here, before anything is installed, so a box without one says what to install.
pinned_version() { awk -v m="$2" '($1 == m && $2 ~ /^v/) { print $2 } ($1 == "require" && $2 == m) { print $3 }' "$REPO/kube/$1/go.mod"; }
CONTAINERD_VERSION=$(pinned_version containerd github.com/containerd/containerd/v2)
RUNC_VERSION=$(pinned_version runc github.com/opencontainers/runc)
runtime_installed() {
  local p
  for p in containerd containerd-shim-runc-v2 ctr runc; do [[ -x /usr/local/bin/$p ]] || return 1; done
  [[ "$(/usr/local/bin/containerd --version 2>/dev/null | awk '{ print $3 }')" == "$CONTAINERD_VERSION" &&
    "v$(/usr/local/bin/runc --version 2>/dev/null | awk 'NR == 1 { print $3 }')" == "$RUNC_VERSION" ]]
}
# go_version GO: the toolchain's own version (1.26.6), not one it would switch to.
go_version() { (cd / && GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9][0-9.]*\).*/\1/p'); }
if ! runtime_installed; then
  GO_NEEDED=$(awk '$1 == "go" { print $2 }' "$REPO/kube/containerd/go.mod" "$REPO/kube/runc/go.mod" | sort -V | tail -n 1)
  # The newest of $GO, the go on PATH and /usr/local/go/bin/go (go.dev's archive unpacked in /usr/local), handed to
  # scripts/runtime-build.sh as GO.
  best="" best_version="" seen=" " found=""
  for candidate in ${GO:-} "$(command -v go || true)" /usr/local/go/bin/go; do
    [[ -n $candidate && -x $candidate && $seen != *" $candidate "* ]] || continue
    seen+="$candidate "
    v=$(go_version "$candidate")
    [[ -n $v ]] || continue
    found+="${found:+, }go$v at $candidate"
    if [[ -z $best_version || "$(printf '%s\n' "$best_version" "$v" | sort -V | tail -n 1)" == "$v" ]]; then best=$candidate best_version=$v; fi
  done
  if [[ -z $best_version || "$(printf '%s\n' "$GO_NEEDED" "$best_version" | sort -V | head -n 1)" != "$GO_NEEDED" ]]; then
    {
      echo "provision: ERROR: containerd $CONTAINERD_VERSION and runc $RUNC_VERSION are not installed in /usr/local/bin, and"
      echo "provision: building them here (scripts/runtime-build.sh) needs Go >= $GO_NEEDED; found: ${found:-no Go}."
      echo "provision: Install Go $GO_NEEDED or newer from https://go.dev/dl/ into /usr/local/go (Debian's golang-go is too old),"
      echo "provision: or copy static containerd, containerd-shim-runc-v2, ctr and runc of those versions into /usr/local/bin"
      echo "provision: (bash scripts/runtime-build.sh on a machine with Go prints the directory it builds them in); then run this again."
    } >&2
    exit 1
  fi
  export GO=$best
  log "containerd $CONTAINERD_VERSION and runc $RUNC_VERSION are built here with go$best_version ($best) and installed into /usr/local/bin"
fi

# The project's Node and its build come from npm (a Vagrant box has a network; the VM test shares them in).
if [[ ! -x $REPO/node_modules/node/bin/node || ! -f $REPO/dist/src/cli/main.js ]]; then
  log "installing npm to run npm ci in $REPO..."
  DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm
  (cd "$REPO" && npm ci)
fi

# The systemd driver reaches systemd over the system bus (nodelet with busctl, runc through go-systemd).
if [[ $DRIVER == systemd && ! -S /run/dbus/system_bus_socket ]]; then
  log "installing dbus for the systemd cgroup driver..."
  DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dbus
fi

# Debian's containerd unit would run a second containerd on /run/containerd; nodelet's is its own unit.
systemctl disable --now containerd.service >/dev/null 2>&1 || true

# containerd's unit, as upstream's containerd.service (delegated cgroup, containers outlive a restart of containerd).
cat >/etc/systemd/system/nodelet-containerd.service <<EOF
[Unit]
Description=containerd for nodelet (configured by $REPO/scripts/runtime.sh)
After=network.target local-fs.target
RequiresMountsFor=$REPO

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd --config /etc/nodelet/containerd/config.toml
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
LimitNOFILE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
EOF

# kubelet's conventions: Restart=always, an environment file for extra flags, the configuration under its root dir.
cat >/etc/systemd/system/nodelet.service <<EOF
[Unit]
Description=nodelet: a kubelet-style node agent
Documentation=file://$REPO/README.md
Wants=network-online.target nodelet-containerd.service
After=network-online.target nodelet-containerd.service
RequiresMountsFor=$REPO

[Service]
EnvironmentFile=-/etc/default/nodelet
ExecStart=$REPO/bin/nodelet.js --config $CONFIG --container-runtime-endpoint $ENDPOINT --logging-format json \$NODELET_EXTRA_ARGS
Restart=always
RestartSec=10
StartLimitInterval=0

[Install]
WantedBy=multi-user.target
EOF
[[ -f /etc/default/nodelet ]] || printf '# Extra flags for nodelet (nodelet --help), as KUBELET_EXTRA_ARGS in /etc/default/kubelet.\nNODELET_EXTRA_ARGS=\n' >/etc/default/nodelet

mkdir -p "$ROOT_DIR" "$STATIC_POD_PATH"
cat >"$CONFIG.tmp" <<EOF
# Written by $REPO/vagrant/provision.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: $DRIVER
staticPodPath: $STATIC_POD_PATH
EOF
mv -f "$CONFIG.tmp" "$CONFIG"
if [[ -n $MANIFESTS ]]; then cp "$MANIFESTS"/*.yaml "$STATIC_POD_PATH"/; fi
ln -sfn "$REPO/bin/nodelet.js" /usr/local/bin/nodelet

systemctl daemon-reload
systemctl enable nodelet-containerd.service nodelet.service >/dev/null 2>&1
NODELET_CGROUP_DRIVER=$DRIVER bash "$REPO/scripts/runtime.sh" up >/dev/null
systemctl restart nodelet.service
log "nodelet.service started (cgroupDriver $DRIVER); sudo nodelet pods -o wide lists its pods"
