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
