#pragma once

// The client's connection to the server's gateway: one method per request,
// each answering the value or a ClientError that carries the exit code
// (1 refused, 3 unreachable or no answer in time). Only client_session.cpp
// knows CAF; the commands are plain C++.

#include <memory>
#include <string>
#include <vector>

#include "core/campaign/report.hpp"
#include "core/error.hpp"
#include "core/job.hpp"
#include "core/status.hpp"
#include "core/task_output.hpp"

namespace claimsched::apps {

struct ClientError {
  int exit_code = 1;
  std::string message;
};

template <class T>
using ClientResult = core::Expected<T, ClientError>;

class ClientSession {
 public:
  /// Connects to HOST:PORT, or to the first reachable of several
  /// comma-separated HA members (2 on a malformed address, 3 if none answers
  /// within `timeout`). A request that finds its member unreachable, or its
  /// partition between owners, is tried again on the next member until
  /// `timeout` has passed; a submit carries its job id from the client on,
  /// so a retry is the same job, never a second one.
  /// With a `token`, every member reached is asked to log in with it first
  /// (1 if it refuses the token); without one, over TLS, the client logs in
  /// by proving it holds its certificate (1 if the server refuses it).
  static ClientResult<std::unique_ptr<ClientSession>> connect(const std::string& addresses, core::Duration timeout,
                                                              const std::string& token = "");
  ~ClientSession();

  const std::string& address() const;
  /// The user the server's [auth] knows this client as (its token's, or its
  /// certificate's); empty when the server does not check logins.
  const std::string& user() const;
  ClientResult<core::JobId> submit(const core::JobSpec& job);
  /// Submits `n` copies, many to a message with a few messages in flight
  /// (one job per message to a server older than this client); ids in order.
  ClientResult<std::vector<core::JobId>> submit_many(const core::JobSpec& job, uint32_t n);
  ClientResult<core::JobView> status(core::JobId job);
  /// Waits up to a second (half the timeout if that is shorter) for some of
  /// `jobs` to end; the server answers at the first job event that ends one:
  /// the views of those that ended, maybe none (a wait that follows one with
  /// ends is sent 50 ms after it at the soonest). nullopt when the server is
  /// too old to be asked this (poll `status` instead).
  ClientResult<std::optional<std::vector<core::JobView>>> wait_ended(const std::vector<core::JobId>& jobs);
  ClientResult<core::JobView> cancel(core::JobId job);
  /// Drains (true) or undrains the named node through its partition's lock
  /// queue; what the operation does now, in words.
  ClientResult<std::string> drain(const std::string& node, bool drain);
  /// Removes the named pool through its partition's lock queue; what the
  /// operation does now, in words (`wait`: once it is done). A pool in use
  /// is refused (1), naming what uses it.
  ClientResult<std::string> remove_pool(const std::string& pool, bool wait);
  /// Moves a partition to another HA member through its lock queue: what the
  /// operation does now, in words (`wait`: once the move is written).
  ClientResult<std::string> move_partition(uint32_t partition, const std::string& member, bool wait);
  ClientResult<std::vector<core::JobView>> queue();
  ClientResult<std::vector<core::JobView>> history(const core::JobFilter& filter);
  ClientResult<std::vector<core::NodeStatus>> nodes();
  /// One JSON document per partition.
  ClientResult<std::vector<std::string>> pools();
  /// A JSON document.
  ClientResult<std::string> explain(core::JobId job);
  ClientResult<core::LogChunk> logs(const core::LogRequest& request);
  /// Members, partition owners, epochs and standbys (a JSON document).
  ClientResult<std::string> members();
  /// A campaign request and the campaign(s) it is about. A submit is sent
  /// once, never retried on another member: a retry would be a second
  /// campaign.
  ClientResult<core::campaign::CampaignReply> campaign(const core::campaign::CampaignRequest& request);

 private:
  struct Impl;
  ClientResult<std::vector<core::JobId>> submit_copies(const core::JobSpec& job, uint32_t n);
  ClientResult<std::vector<core::JobId>> submit_one_by_one(const core::JobSpec& job, uint32_t n);
  explicit ClientSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace claimsched::apps
