// The Node object for the board the agent runs on, built from its
// configuration the way a kubelet (1.25 to 1.30) registers its node and the
// control plane then settles it:
//
// - metadata.name: the configured name, trimmed and lower-cased, as
//   nodeutil.GetHostname does to the hostname or --hostname-override;
// - labels: kubernetes.io/hostname = that name, kubernetes.io/os,
//   kubernetes.io/arch and their deprecated beta.kubernetes.io twins
//   (Kubelet.initialNode); then the configured labels, which override the
//   automatic ones as --node-labels does ("the node label will overwrite
//   default setting"); except that kubernetes.io/os and kubernetes.io/arch are
//   forced back to the real values, as the kubelet reconciles them on every
//   status update since 1.23, and the beta twins follow them, as the node
//   lifecycle controller reconciles those. So a configured hostname label
//   wins; a configured os or arch label does not. An empty os or arch adds no
//   label and leaves a configured one alone;
// - taints: the configured ones (--register-with-taints), plus
//   node.kubernetes.io/unschedulable:NoSchedule when unschedulable and no
//   taint of that key and effect is there yet (initialNode, #63897); when
//   schedulable, any unschedulable:NoSchedule taint is dropped, as the node
//   lifecycle controller's TaintNodesByCondition pass removes it;
// - spec.unschedulable as given; `object` holds the matching v1 Node JSON.
//
// The name is taken as given otherwise: callers validate it (a DNS-1123
// subdomain) before building the node.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"

namespace daemonlet {

Node make_local_node(const std::string& name, const Labels& labels, const std::vector<Taint>& taints,
                     bool unschedulable, const std::string& os, const std::string& arch);

// GOARCH for a `uname -m` machine name: x86_64/amd64 -> amd64,
// aarch64/arm64 -> arm64, aarch64_be -> arm64be, armv5..armv8l and other
// 32-bit arm* -> arm, i386..i686/x86 -> 386, riscv64, ppc64le, ppc64, s390x,
// loongarch64 -> loong64. Empty for anything else (MIPS included: uname -m
// does not tell its endianness).
std::string goarch_from_machine(const std::string& uname_machine);

}  // namespace daemonlet

namespace daemonlet {

// The board's node when the cluster has a Node object for it
// (apiServer.nodeFromCluster): the cluster's labels over the configured ones
// (a key in both: the cluster's value), the cluster's taints plus the
// configured taints of a key and effect the cluster does not have, and
// unschedulable when either says so (a board cordoned locally stays
// cordoned). Then as make_local_node: kubernetes.io/hostname, os and arch.
Node merge_cluster_node(const std::string& name, const Labels& labels, const std::vector<Taint>& taints,
                        bool unschedulable, const Node& cluster, const std::string& os,
                        const std::string& arch);

}  // namespace daemonlet
