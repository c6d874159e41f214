#include "apps/http_auth.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>

namespace claimsched::apps {

namespace {

using core::auth::Action;

struct Checker {
  core::auth::Principal who;
  std::shared_ptr<actors::AuditLog> audit;
  std::string peer;

  /// Whether `who` may; a refusal is audited.
  core::Status operator()(Action action, const std::string& object, const std::string& owner) const {
    auto s = core::auth::authorize(who, action, object, owner);
    if (!s && audit) {
      core::auth::AuditRecord r;
      r.time = std::chrono::duration_cast<core::TimePoint>(std::chrono::system_clock::now().time_since_epoch());
      r.user = who.user;
      r.roles = who.roles();
      r.action = action;
      r.object = object;
      r.reason = s.error().message;
      r.door = "http";
      r.peer = peer;
      audit->write(r);
    }
    return s;
  }
};

}  // namespace

std::string bearer_token(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return "";
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\r')) token.remove_suffix(1);
  return std::string(token);
}

ClusterReader authorized_reader(ClusterReader inner, core::auth::Principal who, std::shared_ptr<actors::AuditLog> audit,
                                std::string peer) {
  auto check = std::make_shared<Checker>(Checker{std::move(who), std::move(audit), std::move(peer)});
  ClusterReader r = inner;
  r.jobs = [inner, check](const core::JobFilter& asked) -> core::Expected<std::vector<core::JobView>> {
    core::JobFilter filter = asked;
    std::string object = filter.user.empty() ? "jobs" : "jobs of user " + filter.user;
    if (auto s = (*check)(Action::list_jobs, object, filter.user); !s) return s.error();
    // A plain user's list is their own jobs.
    if (!check->who.is_operator()) filter.user = check->who.user;
    return inner.jobs(filter);
  };
  r.job = [inner, check](core::JobId id) -> core::Expected<core::JobView> {
    auto view = inner.job(id);
    if (!view) return view;
    if (auto s = (*check)(Action::read_job, "job " + std::to_string(id.value), view->spec.user); !s) return s.error();
    return view;
  };
  r.explain = [inner, check](core::JobId id) -> core::Expected<std::string> {
    auto view = inner.job(id);
    if (!view) return view.error();
    if (auto s = (*check)(Action::read_job, "job " + std::to_string(id.value), view->spec.user); !s) return s.error();
    return inner.explain(id);
  };
  return r;
}

}  // namespace claimsched::apps
