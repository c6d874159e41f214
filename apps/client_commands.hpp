#pragma once

// The client's commands (client.cpp registers and dispatches them). Each
// returns the process's exit code (client.hpp).

#include <string>

#include "apps/client.hpp"
#include "apps/client_session.hpp"
#include "core/ids.hpp"

namespace claimsched::apps {

/// Prints "claimsched: MESSAGE" on stderr; returns `code`.
int fail(int code, const std::string& message);
int fail(const ClientError& error);

/// A job id as typed: a positive integer.
core::Expected<core::JobId> parse_job_id(const std::string& text);
/// JOB or JOB.TASK (TASK defaults to 0).
core::Expected<core::TaskRef> parse_task_ref(const std::string& text);

int run_submit(ClientSession& session, const ClientOptions& o);
int run_status(ClientSession& session, const ClientOptions& o);
/// `status` without a job: members, partition owners, epochs, standbys.
int run_members(ClientSession& session, const ClientOptions& o);
int run_cancel(ClientSession& session, const ClientOptions& o);
/// `queue` (jobs that have not ended; --all: every job) and `jobs`.
int run_jobs(ClientSession& session, const ClientOptions& o, bool queue);
int run_nodes(ClientSession& session, const ClientOptions& o);
/// `node drain|undrain NODE [--wait]`: an operation through the lock queue.
int run_node(ClientSession& session, const ClientOptions& o);
int run_logs(ClientSession& session, const ClientOptions& o);
int run_pools(ClientSession& session, const ClientOptions& o);
/// `pool remove POOL [--wait]`: an operation through the lock queue.
int run_pool(ClientSession& session, const ClientOptions& o);
/// `partition move ID --to MEMBER [--wait]` (HA): an operation through the
/// partition's lock queue; --wait watches the members view for the new owner.
int run_partition(ClientSession& session, const ClientOptions& o);
int run_explain(ClientSession& session, const ClientOptions& o);

/// Builds the job `submit` sends from its file and flags (usage errors: 2);
/// a job that names no user is `user`'s (default: the account's).
ClientResult<core::JobSpec> job_from_options(const ClientOptions& o, const std::string& user = "");

/// Watches a job until it ends, printing each change of its state and its
/// tasks (`status --follow`, `submit --follow`); returns 0 if every task
/// succeeded, 1 if not, 3 if the server went away.
int follow_job(ClientSession& session, core::JobId job, bool json);

}  // namespace claimsched::apps
