#!/usr/bin/env bash
# vm.sh: a Debian 13 (trixie) guest (systemd as PID 1, the unified cgroup v2 hierarchy) under qemu, for running nodelet where
# its users run it. The development machines are cgroup v1 without systemd; this is the only place cgroup v2 and the
# systemd cgroup driver are exercised.
#
# Usage:
#   bash scripts/vm.sh image                   builds the disk image unless the cached one matches its recipe; prints its dir
#   bash scripts/vm.sh run OUT [GUEST ARGS...] boots a throwaway copy of the image with this project shared read-only,
#                                              runs test/vm/guest.sh GUEST ARGS inside, and waits for it to power off.
#                                              OUT (created) receives serial.log and what the guest writes (results,
#                                              journals). Exit status 0 when the guest wrote OUT/done.
#                                              GUEST ARGS: --cgroup-driver cgroupfs|systemd, or --exec PATH (a script
#                                              of the project run in the guest instead of the suite, for development).
#   bash scripts/vm.sh bench [BENCH ARGS...]   the start-up bench (dist/bench/bench.js) inside a guest with the systemd
#                                              driver (NODELET_CGROUP_DRIVER=cgroupfs for the other): the rig and the
#                                              floor's containerd there, nodelet.service stopped; default arguments
#                                              --only startup --peers floor --big-pods 0 --reps 3. Prints the bench's
#                                              table; the guest's logs are in /var/log/nodelet/vm/bench-<time>.
#   NODELET_VM_TIMEOUT=seconds (default 900)   the guest is killed after this long (bench: 3600).
#   NODELET_VM_SUITE=bookworm                  a Debian 12 guest instead of Debian 13 (trixie), its image cached apart.
#   NODELET_VM_API_SERVER_PORT=PORT            a kube-apiserver on the host's 127.0.0.1:PORT, reached from the guest at
#                                              10.0.2.100:PORT (qemu's guestfwd, one socat per connection).
#   NODELET_VM_KUBELET_PORT=PORT               the guest's port PORT reached from the host at ADDRESS:PORT:
#   NODELET_VM_KUBELET_ADDRESS=ADDRESS         where kube-apiserver reaches the guest's kubelet API. ADDRESS (default
#                                              127.0.0.1) must be one of the host's own; the guest gives it to a dummy
#                                              interface and reports it as its node IP (kubelet refuses a loopback one).
#                                              qemu's hostfwd listens on 127.0.0.1:PORT and socat relays ADDRESS:PORT
#                                              there: slirp hands the guest a connection from a non-loopback host
#                                              address with that source, which the guest holds itself and drops.
#                                              All are written to OUT/forwards for the guest.
#
# The image is built from Debian's packages with mmdebstrap into $NODELET_CACHE/vm (default /var/cache/nodelet/vm), keyed
# by this script's recipe: a changed package list or customization rebuilds it. qemu runs with TCG (on these machines
# /dev/kvm opens but a KVM guest never runs; using KVM where it works is not done yet); user-mode networking with restrict=on keeps every packet inside
# the VM. The guest's writes go to a temporary overlay (snapshot=on) that lives as long as its qemu process, reboots
# included, and is gone afterwards. qemu is killed on any exit of this script: nothing of the VM is left running.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=scripts/common.sh
source "$REPO/scripts/common.sh"
CACHE=${NODELET_CACHE:-/var/cache/nodelet}/vm
# NODELET_VM_SUITE=bookworm: a Debian 12 guest (vagrant/provision.sh still supports it). Its image is cached beside the
# default's ($CACHE-bookworm), so switching suites rebuilds neither and a run of one never boots the other's image.
DEFAULT_SUITE=trixie
SUITE=${NODELET_VM_SUITE:-$DEFAULT_SUITE}
[[ $SUITE == "$DEFAULT_SUITE" ]] || CACHE+=-$SUITE
# What the guest needs with no network: systemd as PID 1, a kernel with its initrd, the runtime rig's packages
# (scripts/runtime.sh PACKAGES), the project's Node's libraries, and the tools the provisioning and tests use.
# containerd and runc are not Debian's: the host builds them (scripts/runtime-build.sh) into the image's /usr/local/bin.
GUEST_PACKAGES=(
  systemd systemd-sysv udev dbus linux-image-amd64 initramfs-tools kmod
  containernetworking-plugins busybox-static iptables iproute2 gcc libc6-dev
  libstdc++6 procps util-linux openssl ca-certificates netbase
)
HOST_PACKAGES=(mmdebstrap qemu-system-x86 e2fsprogs socat)
DISK_SIZE=6G
GUEST_IP=10.0.2.15
# The address in the guest's user network where the host's API server is forwarded (NODELET_VM_API_SERVER_PORT).
API_SERVER_GUEST_IP=10.0.2.100

log() { printf 'vm: %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

ensure_host_packages() { ensure_debian_packages "${HOST_PACKAGES[@]}"; }

# The guest's boot-time pieces, written into the image.

# Mounts the shares the kernel command line names (nodelet.repo=PATH, nodelet.modules=PATH) at the same paths as on the
# host, before nodelet's and containerd's units start, at every boot (a rebooted guest needs them again).
guest_mounts_script() {
  cat <<'EOF'
#!/bin/sh
set -eu
# The mount points are made after systemd-tmpfiles has emptied /tmp (the unit's order): a repository under /tmp (a CI
# clone) had its mount point removed under it. The 9p transport is loaded here rather than left to udev, and each mount
# is tried for a while.
modprobe -q 9pnet_virtio 2>/dev/null || true
modprobe -q 9p 2>/dev/null || true
share() {
  mountpoint -q "$2" && return 0
  tries=0
  until mkdir -p "$2" && mount -t 9p -o "trans=virtio,version=9p2000.L,msize=524288,cache=loose,$3" "$1" "$2"; do
    tries=$((tries + 1))
    if [ "$tries" -ge 20 ]; then echo "nodelet-vm: cannot mount the host's share $1 on $2" >&2; return 1; fi
    sleep 0.5
  done
}
for arg in $(cat /proc/cmdline); do
  case $arg in
    nodelet.repo=*) share repo "${arg#*=}" ro ;;
    nodelet.modules=*) share modules "${arg#*=}" ro ;;
    nodelet.out) share out /mnt/out rw ;;
  esac
done
EOF
}

guest_units() {
  cat <<'EOF' >"$1/etc/systemd/system/nodelet-vm-shares.service"
[Unit]
Description=nodelet VM test: 9p shares of the host
DefaultDependencies=no
After=local-fs.target systemd-modules-load.service systemd-tmpfiles-setup.service
Before=nodelet.service nodelet-containerd.service nodelet-vm-test.service

[Service]
Type=oneshot
RemainAfterExit=yes
# On the serial console too: a failure here is the only thing the host can see of a guest whose test never starts.
StandardOutput=journal+console
StandardError=journal+console
ExecStart=/usr/local/lib/nodelet-vm/shares.sh

[Install]
WantedBy=multi-user.target
EOF
  # The test driver: runs the project's test/vm/guest.sh once the system is up; the script powers the guest off (or
  # reboots it and carries on at the next boot).
  cat <<'EOF' >"$1/etc/systemd/system/nodelet-vm-test.service"
[Unit]
Description=nodelet VM test driver
Requires=nodelet-vm-shares.service
After=nodelet-vm-shares.service multi-user.target
ConditionKernelCommandLine=nodelet.out

[Service]
Type=oneshot
TimeoutStartSec=infinity
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStart=/usr/local/lib/nodelet-vm/test.sh

[Install]
WantedBy=multi-user.target
EOF
  cat <<'EOF' >"$1/usr/local/lib/nodelet-vm/test.sh"
#!/bin/sh
for arg in $(cat /proc/cmdline); do case $arg in nodelet.repo=*) repo=${arg#*=} ;; esac; done
exec bash "$repo/test/vm/guest.sh" /mnt/out
EOF
}

customize_image() {
  local root=$1
  echo nodelet-vm >"$root/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 nodelet-vm\n' >"$root/etc/hosts"
  echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$root/etc/fstab"
  # qemu's user network: a fixed address, its gateway and its DNS address (that answers nothing under restrict=on).
  mkdir -p "$root/etc/systemd/network"
  printf '[Match]\nName=en* eth*\n\n[Network]\nAddress=%s/24\nGateway=10.0.2.2\n' "$GUEST_IP" >"$root/etc/systemd/network/10-user.network"
  rm -f "$root/etc/resolv.conf"
  echo 'nameserver 10.0.2.3' >"$root/etc/resolv.conf"
  printf '%s\n' 9p 9pnet_virtio >"$root/etc/modules-load.d/nodelet-vm.conf"
  # Containers of the cgroupfs driver live outside systemd's units: at shutdown systemd's final kill waits for them
  # (a container's PID 1 ignores SIGTERM without a handler) up to DefaultTimeoutStopSec, 90 s by default.
  mkdir -p "$root/etc/systemd/system.conf.d"
  printf '[Manager]\nDefaultTimeoutStopSec=15s\n' >"$root/etc/systemd/system.conf.d/nodelet-vm.conf"
  mkdir -p "$root/usr/local/lib/nodelet-vm"
  guest_mounts_script >"$root/usr/local/lib/nodelet-vm/shares.sh"
  guest_units "$root"
  chmod 755 "$root/usr/local/lib/nodelet-vm/"*.sh
  # containerd 2 and runc as scripts/runtime.sh installs them (static binaries, so the host's build runs in the guest).
  install -m 755 -t "$root/usr/local/bin" "$RUNTIME_BIN"/{containerd,containerd-shim-runc-v2,ctr,runc}
  systemctl --root="$root" enable systemd-networkd.service nodelet-vm-shares.service nodelet-vm-test.service >/dev/null 2>&1
  # Debian's containerd unit would start a second containerd on /run/containerd; the rig runs its own.
  systemctl --root="$root" disable containerd.service >/dev/null 2>&1 || true
  # Timers that would compete for the guest's CPU during a test.
  systemctl --root="$root" mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer >/dev/null 2>&1 || true
  echo 'root:' | chroot "$root" chpasswd -e 2>/dev/null || true
}

recipe_key() {
  {
    printf '%s\n' "$SUITE" "${GUEST_PACKAGES[@]}" "$DISK_SIZE" "$GUEST_IP"
    cat "$RUNTIME_BIN/.stamp"
    declare -f build_image customize_image guest_mounts_script guest_units
  } | sha256sum | cut -d' ' -f1
}

build_image() {
  local key=$1 dir=$CACHE/image work
  ensure_host_packages
  log "building the Debian $SUITE guest image (mmdebstrap, about 2 minutes)..."
  mkdir -p "$CACHE"
  rm -rf "$CACHE"/.build.*
  work=$(mktemp -d "$CACHE/.build.XXXXXX")
  local includes
  includes=$(IFS=,; echo "${GUEST_PACKAGES[*]}")
  mmdebstrap --variant=minbase --include="$includes" \
    "$SUITE" "$work/rootfs" \
    "deb http://deb.debian.org/debian $SUITE main" \
    "deb http://deb.debian.org/debian $SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $SUITE-security main" >"$work/mmdebstrap.log" 2>&1 || {
    tail -n 40 "$work/mmdebstrap.log" >&2
    die "mmdebstrap failed (log $work/mmdebstrap.log)"
  }
  customize_image "$work/rootfs"
  cp -L "$work/rootfs/vmlinuz" "$work/vmlinuz"
  cp -L "$work/rootfs/initrd.img" "$work/initrd.img"
  truncate -s "$DISK_SIZE" "$work/disk.img"
  mkfs.ext4 -q -F -L nodelet-vm -d "$work/rootfs" "$work/disk.img" || die "mkfs.ext4 failed"
  rm -rf "$work/rootfs"
  echo "$key" >"$work/key"
  rm -rf "$dir"
  mv "$work" "$dir"
  log "image ready in $dir"
}

cmd_image() {
  local key
  # The runtime the image carries: built (or found up to date) before the recipe's key, which includes its stamp.
  RUNTIME_BIN=$(bash "$REPO/scripts/runtime-build.sh" | tail -n 1) || die "building containerd and runc failed (scripts/runtime-build.sh)"
  key=$(recipe_key)
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.lock"
  flock 8
  if [[ "$(cat "$CACHE/image/key" 2>/dev/null)" != "$key" ]]; then build_image "$key"; fi
  echo "$CACHE/image"
}

QEMU_PID=""
RELAY_PID=""
stop_qemu() {
  if [[ -n $RELAY_PID ]]; then
    # socat's fork leaves a child per open connection.
    pkill -P "$RELAY_PID" 2>/dev/null || true
    kill "$RELAY_PID" 2>/dev/null || true
    wait "$RELAY_PID" 2>/dev/null || true
    RELAY_PID=""
  fi
  [[ -n $QEMU_PID ]] || return 0
  if kill -0 "$QEMU_PID" 2>/dev/null; then
    log "killing qemu (pid $QEMU_PID)"
    kill -KILL "$QEMU_PID" 2>/dev/null || true
  fi
  wait "$QEMU_PID" 2>/dev/null || true
  QEMU_PID=""
}

# boot_guest OUT IMAGE APPEND NETDEV SHARES...: runs qemu until the guest powers off, its kernel panics or the time is up.
boot_guest() {
  local out=$1 image=$2 append=$3 netdev=$4
  shift 4
  log "booting the guest (TCG; serial log $out/serial.log)..."
  # One TCG thread for both vCPUs. Under qemu 7.2's multi-threaded TCG, Debian 13's 6.12 kernel dies when it patches its
  # own code at run time with the host busy (a static key flipped, e.g. cfs bandwidth's by a cgroup's first cpu.max
  # quota: an int3 Oops in update_curr while text_poke_bp_batch finishes, then a panic): within 100 flips of that key
  # with two busy loops on the host, while single-threaded TCG (or -smp 1) survived 1500 (Debian 12's 6.1 survived 400
  # under multi-threaded TCG). The VM test took no longer for it.
  qemu-system-x86_64 -accel tcg,thread=single -smp 2 -m 4G -no-user-config -nodefaults -display none \
    -kernel "$image/vmlinuz" -initrd "$image/initrd.img" -append "$append" \
    -drive "file=$image/disk.img,format=raw,if=virtio,snapshot=on" \
    -netdev "$netdev" -device virtio-net-pci,netdev=net0 \
    -device virtio-rng-pci \
    "$@" \
    -serial "file:$out/serial.log" -monitor none &
  QEMU_PID=$!
  local deadline=$((SECONDS + ${NODELET_VM_TIMEOUT:-900}))
  while kill -0 "$QEMU_PID" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      log "the guest did not power off within ${NODELET_VM_TIMEOUT:-900} s"
      break
    fi
    if grep -q 'end Kernel panic' "$out/serial.log" 2>/dev/null; then
      log "the guest's kernel panicked"
      break
    fi
    sleep 1
  done
  # qemu only: the relay serves the next boot too.
  if kill -0 "$QEMU_PID" 2>/dev/null; then kill -KILL "$QEMU_PID" 2>/dev/null || true; fi
  wait "$QEMU_PID" 2>/dev/null || true
  QEMU_PID=""
}

cmd_run() {
  local out=${1:?usage: vm.sh run OUT [GUEST ARGS...]}
  shift
  local image
  image=$(cmd_image)
  ensure_host_packages
  mkdir -p "$out"
  out=$(cd "$out" && pwd -P)
  rm -f "$out/done" "$out/results" "$out/serial.log" "$out/forwards"
  printf '%s\n' "$@" >"$out/args"
  # Forwarding under restrict=on: only these explicit rules cross between the guest and the host, and on the host side
  # only through 127.0.0.1 (and socat's relay from the host's own address given for the kubelet port).
  local netdev="user,id=net0,restrict=on,net=10.0.2.0/24,host=10.0.2.2"
  if [[ -n ${NODELET_VM_API_SERVER_PORT:-} ]]; then
    netdev+=",guestfwd=tcp:$API_SERVER_GUEST_IP:$NODELET_VM_API_SERVER_PORT-cmd:socat STDIO TCP4:127.0.0.1:$NODELET_VM_API_SERVER_PORT"
    printf 'API_SERVER_IP=%s\nAPI_SERVER_PORT=%s\n' "$API_SERVER_GUEST_IP" "$NODELET_VM_API_SERVER_PORT" >>"$out/forwards"
  fi
  if [[ -n ${NODELET_VM_KUBELET_PORT:-} ]]; then
    local kubelet_address=${NODELET_VM_KUBELET_ADDRESS:-127.0.0.1}
    netdev+=",hostfwd=tcp:127.0.0.1:$NODELET_VM_KUBELET_PORT-$GUEST_IP:$NODELET_VM_KUBELET_PORT"
    printf 'KUBELET_PORT=%s\nNODE_IP=%s\n' "$NODELET_VM_KUBELET_PORT" "$kubelet_address" >>"$out/forwards"
  fi
  [[ -f $REPO/dist/test/vm/smoke.js ]] || die "dist/ is not built (npm run build)"
  local modules=$REPO/node_modules append shares=()
  modules=$(readlink -f "$modules")
  [[ -x $modules/node/bin/node ]] || die "the project's Node is missing at $modules/node/bin/node (npm ci)"
  append="root=/dev/vda rw console=ttyS0 loglevel=4 nodelet.repo=$REPO nodelet.out"
  shares+=(-virtfs "local,path=$REPO,mount_tag=repo,security_model=none,readonly=on")
  # A node_modules that is a symlink (a worktree's) is shared at its target's path, where the symlink points.
  if [[ $modules != "$REPO/node_modules" ]]; then
    append+=" nodelet.modules=$modules"
    shares+=(-virtfs "local,path=$modules,mount_tag=modules,security_model=none,readonly=on")
  fi
  shares+=(-virtfs "local,path=$out,mount_tag=out,security_model=none")

  trap stop_qemu EXIT
  trap 'exit 130' INT TERM
  if [[ -n ${NODELET_VM_KUBELET_PORT:-} && ${NODELET_VM_KUBELET_ADDRESS:-127.0.0.1} != 127.0.0.1 ]]; then
    # Only this host's own connections (source ADDRESS) are relayed: the guest stays unreachable from elsewhere.
    socat "TCP4-LISTEN:$NODELET_VM_KUBELET_PORT,bind=$NODELET_VM_KUBELET_ADDRESS,range=$NODELET_VM_KUBELET_ADDRESS/32,reuseaddr,fork" \
      "TCP4:127.0.0.1:$NODELET_VM_KUBELET_PORT,bind=127.0.0.1" &
    RELAY_PID=$!
  fi
  # A guest kernel that dies anyway (as Debian 13's 6.12 did under multi-threaded TCG, see boot_guest: an int3 Oops in
  # text_poke_bp_batch, then a panic): such a boot is logged, kept as serial-panic.log, and the guest booted once more.
  local attempt
  for attempt in 1 2; do
    boot_guest "$out" "$image" "$append" "$netdev" "${shares[@]}"
    [[ ! -f $out/done ]] && grep -q 'Kernel panic' "$out/serial.log" 2>/dev/null && ((attempt == 1)) || break
    log "the guest's kernel panicked (kept in $out/serial-panic.log); booting it once more"
    mv -f "$out/serial.log" "$out/serial-panic.log"
    rm -f "$out/results"
  done
  stop_qemu
  trap - EXIT
  [[ -f $out/done ]] || die "the guest did not finish its run (serial log $out/serial.log)"
  log "guest finished: $out"
}

cmd_bench() {
  local out
  out=/var/log/nodelet/vm/bench-$(date -u +%Y%m%dT%H%M%SZ)
  (($#)) || set -- --only startup --peers floor --big-pods 0 --reps 3
  NODELET_VM_TIMEOUT=${NODELET_VM_TIMEOUT:-3600} cmd_run "$out" --cgroup-driver "${NODELET_CGROUP_DRIVER:-systemd}" --bench "$@"
  cat "$out/bench.txt" 2>/dev/null
  if [[ $(cat "$out/bench.exit" 2>/dev/null) != 0 ]]; then
    tail -n 30 "$out/bench.log" >&2 2>/dev/null
    die "the bench failed in the guest (logs in $out)"
  fi
}

case "${1:-}" in
  image) cmd_image ;;
  run)
    shift
    cmd_run "$@"
    ;;
  bench)
    shift
    cmd_bench "$@"
    ;;
  *)
    echo "usage: bash scripts/vm.sh image | run OUT [GUEST ARGS...] | bench [BENCH ARGS...]" >&2
    exit 2
    ;;
esac
