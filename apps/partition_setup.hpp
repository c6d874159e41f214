#pragma once

// How a cluster configuration becomes the setup of one of its partitions
// (actors::assemble_partition): shared by the single server and HA members.

#include <string>

#include "actors/partition.hpp"
#include "apps/cluster_config.hpp"

namespace claimsched::apps {

/// Where partition `id`'s store lives under the configured data directory.
std::string partition_dir(const ClusterConfig& config, core::PartitionId id);

/// Partition `p`'s scheduler (classes, scorers, timeouts, policy) and its
/// store, recovered from what the store holds. The epoch is a floor: recovery
/// picks one above any stored.
actors::PartitionSetup partition_setup(const ClusterConfig& config, const PartitionConfig& p);

}  // namespace claimsched::apps
