#pragma once

// `claimsched sim --scenario starvation`: the fair-share figure of merit. A
// class ("batch") fills the whole cluster with long tasks; then a second class
// ("prod", equal weight, so half the cluster is its fair share) arrives. The
// run reports how long prod takes, after it arrives and after its starvation
// timeout, to hold 90% of its fair share, and how many preemptions that took
// per task reclaimed.

#include "apps/sim.hpp"

namespace claimsched::apps {

int run_starvation_scenario(const SimOptions& options);

}  // namespace claimsched::apps
