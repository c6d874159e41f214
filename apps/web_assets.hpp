#pragma once

// The dashboard's files (web/), built into the binary by
// cmake/EmbedWeb.cmake: the server needs nothing beside it and nothing from
// the internet to serve them.

#include <span>
#include <string_view>

namespace claimsched::apps {

struct WebAsset {
  /// As requested, e.g. "/index.html".
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
};

std::span<const WebAsset> web_assets();

}  // namespace claimsched::apps
