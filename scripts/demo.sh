#!/usr/bin/env bash
# The demo: bring up the project's containerd and images, then run nodelet in the foreground on examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then echo "demo: nodelet needs root (containerd, runc, CNI)" >&2; exit 1; fi
endpoint=$(bash scripts/runtime.sh up)
# kubelet 1.35+ (and so nodelet) refuses a cgroup v1 host unless failCgroupV1 is false: say so, as its user must.
extra=()
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
  echo "demo: this host is cgroup v1, which kubelet 1.37 refuses by default: running nodelet with --fail-cgroupv1=false" >&2
  extra=(--fail-cgroupv1=false)
fi
echo "nodelet: running the pods in examples/; in another shell: npx nodelet pods -o wide   (Ctrl-C stops nodelet, pods keep running)" >&2
exec bin/nodelet.js --pod-manifest-path examples --container-runtime-endpoint "$endpoint" "${extra[@]}" "$@"
