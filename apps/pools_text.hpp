#pragma once

// The text of `claimsched pools`: the server's JSON documents (one per
// partition, messages/json_views.hpp) as tables of pools, classes, users and
// jobs. Shared by the client and `sim --scenario starvation`.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"

namespace claimsched::apps {

/// The tables for `docs`; an error if one is not the JSON the server sends.
core::Expected<std::string> pools_text(const std::vector<std::string>& docs);

namespace pools_text_detail {
/// A share with four decimals ("-" if not a number).
std::string share(const nlohmann::json& v);
/// A field as text ("-" if missing or empty).
std::string str(const nlohmann::json& j, const char* key);
/// An ISO 8601 UTC time field in local time ("-" if none).
std::string since(const nlohmann::json& j, const char* key);
}  // namespace pools_text_detail

}  // namespace claimsched::apps
