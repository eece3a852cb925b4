#!/usr/bin/env bash
# cluster.sh OUT: the VM test's cluster phase inside the guest (test/vm/guest.sh runs it when the host forwards an API
# server, OUT/forwards from scripts/vm.sh). The host's test writes OUT/cluster/{kubeconfig,ca.crt} (a system:node:
# client certificate of its real control plane, the server named by the control plane's name) and then
# OUT/cluster/ready. nodelet.service joins as kubeadm leaves a kubelet: its extra flags in /etc/default/nodelet and a
# restart. The node reports the host's address (NODE_IP, on a dummy interface here) and its kubelet port, which
# scripts/vm.sh forwards from that address, so kube-apiserver on the host reaches the kubelet API there. The host then
# checks the Node, a pod and its logs, and writes OUT/cluster/finished.
set -uo pipefail
OUT=$1
C=$OUT/cluster
say() { printf '[guest %s] %s\n' "$(date -u +%T)" "$*"; }
result() { echo "$1 cluster/$2" >>"$OUT/results"; }

# shellcheck disable=SC1091
. "$OUT/forwards"
say "waiting for the host's control plane (OUT/cluster/ready)"
# The host writes OUT/cluster/finished at once when its control plane failed.
for ((i = 0; i < 600; i++)); do [[ -f $C/ready || -f $C/finished ]] && break; sleep 1; done
if [[ ! -f $C/ready ]]; then
  result FAIL "nodelet.service with the cluster's kubeconfig: the host's control plane is not ready (no OUT/cluster/ready)"
  exit 1
fi

# The kubeconfig names the API server by the control plane's name (a name in its serving certificate); here that name is
# qemu's forwarded address, as a node of a kind cluster maps kind-control-plane in /etc/hosts.
server_host=$(sed -n 's|^ *server: https://\([^:/]*\):.*|\1|p' "$C/kubeconfig" | head -n 1)
grep -q " $server_host\$" /etc/hosts || echo "$API_SERVER_IP $server_host" >>/etc/hosts
install -D -m 600 "$C/kubeconfig" /etc/nodelet/kubeconfig
install -D -m 644 "$C/ca.crt" /etc/nodelet/ca.crt
# The node IP kube-apiserver dials is the host address scripts/vm.sh forwards the kubelet port from; the guest holds it on a dummy
# interface, so it is an address of this node (kubelet's node IP check) without a route anywhere.
ip link add nodelet-nodeip type dummy 2>/dev/null || true
ip addr replace "$NODE_IP/32" dev nodelet-nodeip
ip link set nodelet-nodeip up
cat >/etc/default/nodelet <<EOF
# Written by the VM test's cluster phase (test/vm/cluster.sh).
NODELET_EXTRA_ARGS=--kubeconfig /etc/nodelet/kubeconfig --client-ca-file /etc/nodelet/ca.crt --node-ip $NODE_IP --port $KUBELET_PORT
EOF
if systemctl restart nodelet.service && systemctl is-active -q nodelet.service; then
  result PASS "nodelet.service with the cluster's kubeconfig: $server_host is $API_SERVER_IP:$API_SERVER_PORT, kubelet port $KUBELET_PORT"
else
  result FAIL "nodelet.service with the cluster's kubeconfig: not active after its restart"
  exit 1
fi
say "nodelet.service restarted as a node of the host's cluster; waiting for the host's checks (OUT/cluster/finished)"
for ((i = 0; i < 600; i++)); do [[ -f $C/finished ]] && break; sleep 1; done
