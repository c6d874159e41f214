#include "actors/audit_log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "messages/json_views.hpp"

namespace claimsched::actors {

AuditLog::AuditLog(std::shared_ptr<spdlog::logger> logger, std::string path)
    : logger_(std::move(logger)), path_(std::move(path)) {}

core::Expected<std::shared_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  try {
    auto parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
    // Not registered with spdlog: the server's own log level and sinks never
    // touch it, and a second server in one process (tests) opens its own.
    auto logger = std::make_shared<spdlog::logger>("audit", std::move(sink));
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::info);
    return std::shared_ptr<AuditLog>(new AuditLog(std::move(logger), path));
  } catch (const spdlog::spdlog_ex& e) {
    return core::make_error(core::Errc::io_error, "[auth] audit_log: cannot open '" + path + "': " + e.what());
  }
}

std::string AuditLog::line(const core::auth::AuditRecord& r) {
  // Ordered: a person reading the file sees when and who first.
  nlohmann::ordered_json j{{"time", messages::iso_time(r.time)},
                           {"user", r.user.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.user)},
                           {"roles", r.roles},
                           {"action", std::string(core::auth::to_string(r.action))},
                           {"object", r.object},
                           {"outcome", r.allowed ? "allowed" : "refused"},
                           {"reason", r.reason},
                           {"door", r.door}};
  if (!r.peer.empty()) j["peer"] = r.peer;
  // A job's name or a pool's may hold anything: never throw on bad UTF-8.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void AuditLog::write(const core::auth::AuditRecord& record) { logger_->info(line(record)); }

}  // namespace claimsched::actors
