#pragma once

// A scheduling class (DUCC): one type for the live scheduler, the policy and
// the configuration file. Priority orders classes; weight divides the room of
// classes of one priority; the policy says whether the class's work is
// preemptible (fair_share), a capped non-preemptible request (fixed_share) or
// a whole machine (reserve); placement says how its tasks are spread.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"
#include "core/locks/lock_queue.hpp"
#include "core/placement.hpp"
#include "core/resources.hpp"

namespace claimsched::core {

/// Upper bounds on some dimensions; dimensions not set are unlimited. Used for
/// pool resource_limits, allotments and non_preemptible_resource_usage_threshold,
/// where "gpu=0" (a limit of zero) differs from "no limit on gpu".
struct Limits {
  Resources values;
  /// Bit d set: dimension d is limited.
  uint8_t set_mask = 0;

  bool empty() const { return set_mask == 0; }
  bool has(DimensionId d) const { return (set_mask >> d) & 1U; }
  void set(DimensionId d, int64_t v) {
    values.set(d, v);
    set_mask = static_cast<uint8_t>(set_mask | (1U << d));
  }
  /// True if `usage` is within every set dimension (always true when empty).
  bool allows(const Resources& usage) const;
  /// YTsaurus's StrictlyDominates(limits, usage): non-empty and every set
  /// dimension is strictly above `usage`.
  bool strictly_above(const Resources& usage) const;
  /// "cpu=4,gpu=0"; empty string when empty.
  std::string to_string() const;
  /// Parses "cpu=4,memory=16Gi,gpu=0": the dimensions named are set, even at 0.
  static Expected<Limits> parse(std::string_view text);

  friend bool operator==(const Limits&, const Limits&) = default;
};

enum class ClassPolicy : uint8_t {
  /// Weighted fair share; every allocation is preemptible (DUCC FAIR_SHARE).
  fair_share = 0,
  /// Non-preemptible, one allocation per request (all its tasks or none),
  /// capped by allotment; may be evicted but never preempted (DUCC FIXED_SHARE).
  fixed_share,
  /// One whole machine whose memory matches the request within one quantum;
  /// never preempted, never promoted to a bigger machine (DUCC RESERVE).
  reserve,
};

std::string_view to_string(ClassPolicy p);
Expected<ClassPolicy> parse_class_policy(std::string_view s);

/// Backfilling in the queue stage (core/pipeline/backfill.hpp): what a job of
/// the class that finds no room gets.
enum class BackfillMode : uint8_t {
  /// Nothing: it waits, and later jobs take whatever room there is (as
  /// before backfilling existed).
  none = 0,
  /// EASY (Maui, Slurm): the first waiting job of the class gets a
  /// reservation at the earliest time it fits; later jobs start only if they
  /// do not delay it.
  easy,
  /// Every waiting job of the class gets one, in queue order, each against
  /// the room the earlier ones left.
  conservative,
};

std::string_view to_string(BackfillMode m);
Expected<BackfillMode> parse_backfill_mode(std::string_view s);

struct ClassConfig {
  std::string name;
  /// Higher is evaluated (and placed) first.
  int32_t priority = 0;
  /// Weighted fair share among fair_share classes of the same priority and pool.
  uint32_t weight = 1;
  /// How the class's tasks are spread over nodes.
  PlacementPolicy placement;
  ClassPolicy policy = ClassPolicy::fair_share;
  /// The pool the class is bound to in the policy's pool tree (empty: the
  /// root of the partition's first pool).
  std::string pool;
  /// fixed_share / reserve: what one user may hold in this class. Empty: unlimited.
  Limits allotment;
  /// Per-user overrides of `allotment`, sorted by user name.
  std::vector<std::pair<std::string, Limits>> user_allotments;
  /// DUCC initialization cap: at most this many tasks until one task of the job
  /// has passed initialization. 0: no cap.
  uint32_t initialization_cap = 0;
  /// DUCC expand-by-doubling: grow a job to at most twice its running tasks per cycle.
  bool expand_by_doubling = false;
  /// DUCC prediction: do not grow a job beyond what its observed rate needs to finish.
  bool prediction = false;
  /// DUCC prediction fudge: how far past the initialization time to look.
  Duration prediction_fudge{0};
  /// Ganeti's job queue for the class: order (fifo or predictive), running
  /// limit, base_value, aging (core/locks/lock_queue.hpp).
  LockQueueSettings queue;
  /// Backfilling for the class's waiting jobs (none: off).
  BackfillMode backfill = BackfillMode::none;

  /// A fair_share class with default placement.
  static ClassConfig named(std::string name, int32_t priority = 0, uint32_t weight = 1) {
    ClassConfig c;
    c.name = std::move(name);
    c.priority = priority;
    c.weight = weight;
    return c;
  }
  /// Non-preemptible work (fixed_share, reserve).
  bool non_preemptible() const { return policy != ClassPolicy::fair_share; }
  /// The allotment that applies to `user` in this class.
  const Limits& allotment_of(std::string_view user) const;
};

/// What a reservation of `machine` counts against its user's allotments: the
/// machine, its memory rounded down to whole quanta (DUCC counts shares in
/// quanta); without a quantum, the machine.
Resources reservation_charge(Resources machine, int64_t quantum);

/// Checks one class on its own: the error names the class and the field.
Status validate(const ClassConfig& c);
/// Checks a set of classes: unique names, each valid, and (DUCC) classes of
/// one priority share one policy: resources of a priority are divided at once,
/// by weights for fair_share and by allotments for the others, and DUCC does
/// not define how a mix would divide them.
Status validate_classes(const std::vector<ClassConfig>& classes);

}  // namespace claimsched::core
