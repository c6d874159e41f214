// `claimsched status` without a job: the cluster's members, who owns each
// partition in which epoch, its standbys and how far behind each is.

#include <cstdio>

#include <nlohmann/json.hpp>

#include "apps/client_commands.hpp"

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
    std::printf("%-10lld %-16s %-12s %-8lld %s\n", static_cast<long long>(p.value("partition", int64_t{0})),
                pools.c_str(), owner.empty() ? "(none)" : owner.c_str(),
                static_cast<long long>(p.value("epoch", int64_t{0})), standbys.empty() ? "-" : standbys.c_str());
  }
}

}  // namespace

int run_members(ClientSession& s, const ClientOptions& o) {
  auto text = s.members();
  if (!text) return fail(text.error());
  auto view = nlohmann::json::parse(*text, nullptr, false);
  if (o.json || !view.is_object())
    std::printf("%s\n", text->c_str());
  else
    print_members(view);
  return kExitOk;
}

}  // namespace claimsched::apps
