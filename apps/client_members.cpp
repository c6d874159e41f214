// `claimsched status` without a job: the cluster's members, who owns each
// partition in which epoch, its standbys and how far behind each is; and
// `claimsched partition move`, which changes who owns one.

#include <chrono>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"
#include "apps/client_json.hpp"

namespace claimsched::apps {

namespace {

void print_members(const nlohmann::json& v) {
  if (v.value("mode", "") == "ha")
    std::printf("HA cluster, asked member %s (ack %s, lease %lld s, etcd %s%s)\n", v.value("member", "").c_str(),
                v.value("ack", "").c_str(), static_cast<long long>(v.value("lease_ttl_s", int64_t{0})),
                v.value("etcd", "").c_str(),
                v.value("etcd_problem", "").empty() ? "" : (": " + v.value("etcd_problem", "")).c_str());
  else
    std::printf("single server (static ownership)\n");
  std::printf("%-12s %-24s %s\n", "MEMBER", "ADDRESS", "HOST/PID");
  for (const auto& m : v.value("members", nlohmann::json::array()))
    std::printf("%-12s %-24s %s/%lld\n", m.value("name", "").c_str(), m.value("address", "").c_str(),
                m.value("host", "").c_str(), static_cast<long long>(m.value("pid", int64_t{0})));
  std::printf("%-10s %-16s %-12s %-8s %s\n", "PARTITION", "POOLS", "OWNER", "EPOCH", "STANDBYS (lag)");
  for (const auto& p : v.value("partitions", nlohmann::json::array())) {
    std::string pools, standbys;
    for (const auto& pool : p.value("pools", nlohmann::json::array()))
      pools += (pools.empty() ? "" : ",") + pool.get<std::string>();
    for (const auto& s : p.value("standbys", nlohmann::json::array()))
      standbys += (standbys.empty() ? "" : ", ") + s.value("name", "") + " (" +
                  (s.value("bootstrapping", false) ? std::string("copying a checkpoint")
                                                   : std::to_string(s.value("lag_records", int64_t{0})) + " records, " +
                                                         std::to_string(s.value("lag_ms", int64_t{0})) + " ms") +
                  ")";
    std::string owner = p.value("owner", "");
    if (owner.empty()) owner = "(none)";
    if (!p.value("pinned_to", "").empty()) owner += " (moved to " + p.value("pinned_to", "") + ")";
    std::printf("%-10lld %-16s %-12s %-8lld %s\n", static_cast<long long>(p.value("partition", int64_t{0})),
                pools.c_str(), owner.c_str(),
                static_cast<long long>(p.value("epoch", int64_t{0})), standbys.empty() ? "-" : standbys.c_str());
  }
}

/// The partition's entry in a members view (null if it has none).
const nlohmann::json* partition_entry(const nlohmann::json& view, uint32_t id) {
  if (!view.is_object() || !view.contains("partitions")) return nullptr;
  for (const auto& p : view["partitions"])
    if (p.value("partition", int64_t{0}) == id) return &p;
  return nullptr;
}

}  // namespace

int run_partition(ClientSession& s, const ClientOptions& o) {
  auto words = s.move_partition(o.partition_id, o.move_to, o.wait);
  if (!words) return fail(words.error());
  if (o.json)
    std::printf("%s\n", nlohmann::json{{"partition", o.partition_id}, {"action", o.partition_action},
                                       {"to", o.move_to}, {"operation", *words}}
                            .dump()
                            .c_str());
  else
    std::printf("%s\n", words->c_str());
  if (!o.wait) return kExitOk;
  // The handover follows the pin: the owner stops placing once the new
  // member's copy is close, then resigns when it has caught up.
  auto deadline = std::chrono::steady_clock::now() + o.timeout;
  for (;;) {
    auto text = s.members();
    if (!text) return fail(text.error());
    auto view = nlohmann::json::parse(*text, nullptr, false);
    const nlohmann::json* p = partition_entry(view, o.partition_id);
    if (p && p->value("owner", "") == o.move_to) {
      if (!o.json)
        std::printf("partition %u: owned by %s (epoch %lld)\n", o.partition_id, o.move_to.c_str(),
                    static_cast<long long>(p->value("epoch", int64_t{0})));
      return kExitOk;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(kExitFailed, "partition " + std::to_string(o.partition_id) + " is not owned by " + o.move_to +
                                   " yet (owner: " + (p ? p->value("owner", "") : std::string("?")) +
                                   "); `claimsched status` shows when it is");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int run_members(ClientSession& s, const ClientOptions& o) {
  auto text = s.members();
  if (!text) return fail(text.error());
  auto view = document_json(*text, "a members view");
  if (!view) {
    // An older server's text: shown as it came.
    std::printf("%s\n", text->c_str());
    return kExitOk;
  }
  if (o.json)
    std::printf("%s\n", view->dump().c_str());
  else
    print_members(*view);
  return kExitOk;
}

}  // namespace claimsched::apps
