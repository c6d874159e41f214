// Words and tables for people: render_text, explain_job, describe.

#include <algorithm>
#include <cstdio>

#include "core/duration.hpp"
#include "core/policy/policy.hpp"

namespace claimsched::core::policy {

namespace {

std::string share(Share s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", share_to_double(s));
  return buf;
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string when(TimePoint t) { return t == kNever ? "-" : format_duration(t); }

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

using Table = std::vector<std::vector<std::string>>;

void print_table(std::string& out, const std::string& title, const Table& rows) {
  out += title + "\n";
  if (rows.size() <= 1) {
    out += "  (none)\n\n";
    return;
  }
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += ' ';
      line += row[c];
      if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 1, ' ');
    }
    out += line + "\n";
  }
  out += "\n";
}

std::string task(const TaskRef& t) { return std::to_string(t.job.value) + "." + std::to_string(t.index); }

std::string placement_line(const Placement& p) {
  std::string s = "place " + std::to_string(p.count) + " x job " + std::to_string(p.job.value) + " on node " +
                  std::to_string(p.node.value) + " [" + std::string(to_string(p.stage)) + "] (" +
                  p.per_task.to_string() + " each)";
  if (!p.waits_for.empty()) {
    s += " after";
    for (size_t i = 0; i < p.waits_for.size(); ++i) s += (i ? ", " : " ") + task(p.waits_for[i]);
    s += " are gone";
  }
  return s;
}

}  // namespace

std::string describe(const Removal& r) {
  std::string s = std::string(to_string(r.kind)) + " of task " + task(r.task) + " on node " +
                  std::to_string(r.node.value) + " (" + std::string(to_string(r.reason));
  if (r.preemptor) s += ", for job " + std::to_string(r.preemptor->value);
  if (!r.pool.empty()) s += ", pool " + r.pool;
  s += ")";
  if (r.interrupt)
    s += ": interruption signal, killed after " + format_duration(r.kill_after) + " unless it finishes";
  else
    s += ": killed now";
  if (!r.detail.empty()) s += ". " + r.detail;
  return s;
}

std::string render_shares(const CycleResult& r) {
  std::string out;

  Table pools{{"POOL", "PARENT", "NODES", "JOBS", "CAPACITY", "LIMITS", "DEMAND", "FAIR", "USAGE", "STATUS",
               "STARVATION", "BELOW SINCE"}};
  for (const auto& p : r.pools)
    pools.push_back({p.name, or_dash(p.parent), std::to_string(p.nodes), std::to_string(p.jobs),
                     or_dash(p.scope.to_string()), or_dash(p.resource_limits.to_string()),
                     share(p.demand_share), share(p.fair_share_share), share(p.usage_share),
                     std::string(to_string(p.scheduling)), std::string(to_string(p.starvation)),
                     when(p.below_since)});
  print_table(out, "POOLS", pools);

  Table classes{{"CLASS", "POOL", "PRIORITY", "WEIGHT", "POLICY", "USERS", "JOBS", "DEMAND", "FAIR", "USAGE",
                 "STATUS"}};
  for (const auto& c : r.classes)
    classes.push_back({c.name, c.pool, std::to_string(c.priority), std::to_string(c.weight),
                       std::string(to_string(c.policy)), std::to_string(c.users), std::to_string(c.jobs),
                       share(c.demand_share), share(c.fair_share_share), share(c.usage_share),
                       std::string(to_string(c.scheduling))});
  print_table(out, "CLASSES", classes);

  Table users{{"CLASS", "USER", "JOBS", "DEMAND", "FAIR", "USAGE", "STATUS"}};
  for (const auto& u : r.users)
    users.push_back({u.class_name, u.user, std::to_string(u.jobs), share(u.demand_share),
                     share(u.fair_share_share), share(u.usage_share), std::string(to_string(u.scheduling))});
  print_table(out, "USERS (per class)", users);

  Table jobs{{"JOB", "USER", "CLASS", "POOL", "RUN", "PEND", "CAP", "FAIR TASKS", "DEMAND", "FAIR", "USAGE",
              "STATUS", "STARVATION", "BELOW SINCE", "PLACE", "REMOVE"}};
  for (const auto& j : r.jobs)
    jobs.push_back(
        {std::to_string(j.id.value), j.user, j.class_name, j.pool, std::to_string(j.running),
         std::to_string(j.pending),
         std::to_string(j.cap) +
             (j.cap_reason == CapReason::none ? "" : " (" + std::string(to_string(j.cap_reason)) + ")"),
         fixed2(j.fair_tasks), share(j.demand_share), share(j.fair_share_share), share(j.usage_share),
         std::string(to_string(j.scheduling)), std::string(to_string(j.starvation)), when(j.below_since),
         std::to_string(j.placed), std::to_string(j.removed)});
  print_table(out, "JOBS", jobs);
  return out;
}

std::string render_text(const CycleResult& r) {
  std::string out = "now " + format_duration(r.now) +
                    " (dry run: shares are fractions of the pool subtree the work may use)\n\n";
  out += render_shares(r);

  Table allocs{{"TASK", "NODE", "START", "CLASS", "FLAGS"}};
  for (const auto& j : r.jobs)
    for (const auto& a : j.allocations) {
      std::string flags;
      if (a.squatter) flags += "squatter ";
      if (a.interruptible) flags += "interruptible ";
      if (a.lost) flags += "lost(node down) ";
      if (!flags.empty()) flags.pop_back();
      allocs.push_back({task(a.task), std::to_string(a.node.value), format_duration(a.start),
                        j.preemptible ? std::string(to_string(a.cls))
                                      : "non_preemptible (" + std::string(to_string(j.policy)) + ")",
                        or_dash(flags)});
    }
  print_table(out, "ALLOCATIONS (by job, in start order)", allocs);

  out += "NEXT CYCLE\n";
  for (const auto& rm : r.plan.removals) out += "  " + describe(rm) + "\n";
  for (const auto& p : r.plan.placements) out += "  " + placement_line(p) + "\n";
  const auto& st = r.plan.stats;
  out += "  summary: " + std::to_string(st.placements) + " placements (" + std::to_string(st.tasks_placed) +
         " tasks), " + std::to_string(st.preemptions) + " preemptions, " + std::to_string(st.evictions) +
         " evictions";
  for (size_t i = 0; i < kRemovalReasons; ++i)
    if (st.by_reason[i] > 0)
      out += "; " + std::string(to_string(static_cast<RemovalReason>(i))) + " " +
             std::to_string(st.by_reason[i]);
  if (st.nodes_in_backoff > 0) out += "; " + std::to_string(st.nodes_in_backoff) + " node(s) in backoff";
  out += "\n\n";

  out += "STILL PENDING AFTER THE NEXT CYCLE\n";
  bool any = false;
  for (const auto& j : r.jobs)
    if (!j.pending_reason.empty()) {
      out += "  job " + std::to_string(j.id.value) + ": " + j.pending_reason + "\n";
      any = true;
    }
  if (!any) out += "  (none)\n";
  return out;
}

std::string explain_job(const CycleResult& r, JobId id) {
  const JobRow* j = r.job(id);
  if (!j) return "job " + std::to_string(id.value) + " is not in the snapshot";
  std::string s = "job " + std::to_string(id.value) + (j->name.empty() ? "" : " (" + j->name + ")") +
                  " of user " + j->user + ", class " + j->class_name + " (" +
                  std::string(to_string(j->policy)) + "), pool " + j->pool + ": " +
                  std::to_string(j->running) + " running, " + std::to_string(j->pending) + " pending.\n";
  s += "  fair share " + fixed2(j->fair_tasks) + " tasks (" + share(j->fair_share_share) + " of " +
       j->scope.to_string() + "), usage " + share(j->usage_share) + "; " +
       std::string(to_string(j->scheduling));
  if (j->below_since != kNever) s += " since " + format_duration(j->below_since);
  s += ", " + std::string(to_string(j->starvation));
  if (j->starvation != j->own_starvation) s += " (inherited from its pool)";
  s += ".\n";
  if (j->cap < j->running + j->pending)
    s += "  its demand is capped at " + std::to_string(j->cap) + " tasks (" +
         std::string(to_string(j->cap_reason)) + ").\n";
  for (const auto& p : r.plan.placements)
    if (p.job == id) s += "  next cycle: " + placement_line(p) + ".\n";
  for (const auto& rm : r.plan.removals) {
    if (rm.task.job == id) s += "  next cycle: " + describe(rm) + ".\n";
    if (rm.preemptor == id && rm.task.job != id)
      s += "  for it: " + std::string(to_string(rm.kind)) + " of task " + task(rm.task) + " on node " +
           std::to_string(rm.node.value) + ".\n";
  }
  if (!j->pending_reason.empty())
    s += "  pending because: " + j->pending_reason + ".\n";
  else if (j->pending > 0 && j->placed >= j->pending)
    s += "  all its pending tasks are placed next cycle.\n";
  return s;
}

}  // namespace claimsched::core::policy
