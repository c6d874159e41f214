#pragma once

// `claimsched campaign submit FILE [--test-first] | status ID | list |
// cancel ID | explain ID` (issue 16), each with --json. Exit codes as every
// client command (apps/client.hpp): 0 done, 1 refused, 2 usage or a bad
// campaign file (nothing sent), 3 server unreachable.

#include <string>

#include "core/ids.hpp"

namespace CLI {
class App;
}

namespace claimsched::apps {

struct CampaignOptions {
  /// submit, status, list, cancel or explain.
  std::string action;
  /// The file (submit) or the campaign id.
  std::string target;
  bool test_first = false;
  bool json = false;
  std::string server;
  std::string token_file;
  core::Duration timeout = std::chrono::seconds(10);
};

void add_campaign_commands(CLI::App& app, CampaignOptions& o);
int run_campaign(const CampaignOptions& o);

}  // namespace claimsched::apps
