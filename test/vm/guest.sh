#!/usr/bin/env bash
# guest.sh OUT: the VM test inside the Debian 13 guest, started at every boot by the image's nodelet-vm-test.service
# (scripts/vm.sh). OUT is the host's directory shared in: OUT/args holds the run's arguments (--cgroup-driver D),
# results and logs go there. First boot: provision as Vagrant does (vagrant/provision.sh), the smoke suite, reboot.
# Second boot: the smoke suite's after-reboot checks, then, when the host forwards an API server (OUT/forwards), the
# cluster phase (test/vm/cluster.sh), the journals, OUT/done, power off.
set -uo pipefail
OUT=$1
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
STATE=/var/lib/nodelet-vm-test
NODE=$REPO/node_modules/node/bin/node
mkdir -p "$STATE"
exec > >(tee -a "$OUT/guest.log") 2>&1

DRIVER=cgroupfs
EXEC=""
BENCH=0
BENCH_ARGS=()
# What smoke.ts expects in the pod cgroups' pids.max.
POD_PIDS_LIMIT=1024
mapfile -t args <"$OUT/args"
set -- "${args[@]}"
while (($#)); do
  case $1 in
    --cgroup-driver) DRIVER=$2; shift 2 ;;
    # For developing in the guest: run this script (a path in the project) instead of the suite, then power off.
    --exec) EXEC=$2; shift 2 ;;
    # The start-up bench instead of the suite (scripts/vm.sh bench): every argument after it is the bench's.
    --bench) shift; BENCH_ARGS=("$@"); BENCH=1; break ;;
    *) shift ;;
  esac
done

say() { printf '[guest %s] %s\n' "$(date -u +%T)" "$*"; }

finish() {
  say "collecting journals and powering off"
  journalctl -u nodelet.service --no-pager -o cat >"$OUT/nodelet-journal.log" 2>&1
  journalctl -u nodelet-containerd.service --no-pager >"$OUT/containerd-journal.log" 2>&1
  journalctl -b -1 -u nodelet.service --no-pager -o cat >"$OUT/nodelet-journal-previous-boot.log" 2>&1
  journalctl --no-pager -p warning >"$OUT/journal-warnings.log" 2>&1
  touch "$OUT/done"
  sync
  # Everything is in OUT: no need to stop each unit on the way down.
  systemctl poweroff --force
  exit 0
}

if [[ -n $EXEC ]]; then
  bash "$REPO/$EXEC" "$OUT" || say "$EXEC exited with $?"
  finish
fi
# The bench as on the host (floor and nodelet on containerds of the rig, the same pods), in this guest: systemd, cgroup
# v2, the driver asked for. nodelet.service is stopped: the bench runs its own agent. The table goes to OUT/bench.txt.
if ((BENCH)); then
  bash "$REPO/vagrant/provision.sh" --cgroup-driver "$DRIVER" && systemctl stop nodelet.service &&
    NODELET_RUNTIME_INSTANCE=floor NODELET_CGROUP_DRIVER=$DRIVER bash "$REPO/scripts/runtime.sh" up >/dev/null
  status=$?
  if ((status == 0)); then
    printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: %s\n' "$DRIVER" >"$STATE/bench-config.yaml"
    say "bench: ${BENCH_ARGS[*]}"
    "$NODE" "$REPO/dist/bench/bench.js" --agent-config "$STATE/bench-config.yaml" "${BENCH_ARGS[@]}" >"$OUT/bench.txt" 2>"$OUT/bench.log"
    status=$?
  fi
  echo "$status" >"$OUT/bench.exit"
  finish
fi
phase=$(cat "$STATE/phase" 2>/dev/null || echo first)
say "phase $phase, cgroup driver $DRIVER, $(stat -fc %T /sys/fs/cgroup) on /sys/fs/cgroup, kernel $(uname -r)"
# The agent's journal as it is written: a guest killed at the host's timeout collects no journals in finish.
journalctl -f -n all -u nodelet.service --no-pager -o cat >>"$OUT/nodelet-journal-live-$phase.log" 2>&1 &
case $phase in
  first)
    t0=$SECONDS
    if ! bash "$REPO/vagrant/provision.sh" --cgroup-driver "$DRIVER"; then
      echo "FAIL first/provision: vagrant/provision.sh failed (guest.log)" >>"$OUT/results"
      finish
    fi
    # The smoke suite's pods get a pids limit (kubelet's podPidsLimit) from their first sandbox on: the configuration
    # first, then the static pods.
    echo "podPidsLimit: $POD_PIDS_LIMIT" >>/var/lib/nodelet/config.yaml
    systemctl restart nodelet.service
    cp "$REPO"/test/vm/manifests/*.yaml /etc/kubernetes/manifests/
    echo "PASS first/provision: in $((SECONDS - t0)) s" >>"$OUT/results"
    "$NODE" "$REPO/dist/test/vm/smoke.js" first "$OUT/results" "$DRIVER" "$POD_PIDS_LIMIT" || say "smoke suite exited with $?"
    journalctl -u nodelet.service --no-pager -o cat >"$OUT/nodelet-journal-before-reboot.log" 2>&1
    echo rebooted >"$STATE/phase"
    say "rebooting"
    sync
    systemctl reboot
    ;;
  rebooted)
    "$NODE" "$REPO/dist/test/vm/smoke.js" rebooted "$OUT/results" "$DRIVER" "$POD_PIDS_LIMIT" || say "smoke suite exited with $?"
    if [[ -s $OUT/forwards ]]; then bash "$REPO/test/vm/cluster.sh" "$OUT" || say "cluster phase exited with $?"; fi
    finish
    ;;
esac
