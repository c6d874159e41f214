#pragma once

// A GoogleTest fixture over CAF's test coordinator: the scheduler is a queue
// of actor jobs the test steps by hand, and time moves only when the test
// says so. (CAF's own test DSL crashes inside GoogleTest; see
// shared/notes/dependencies.md.)

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "actors/actors.hpp"
#include "messages/caf_types.hpp"

namespace claimsched::testing {

class ActorTest : public ::testing::Test {
 protected:
  ActorTest() {
    messages::register_types(cfg_);
    cfg_.set("scheduler.policy", caf::atom("testing"));
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  }

  ~ActorTest() override {
    for (auto& a : spawned_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched_->run();
    // Pending timers would keep the system's destructor waiting.
    while (sched_->has_pending_timeout()) {
      sched_->trigger_timeouts();
      sched_->run();
    }
  }

  caf::actor_system& sys() { return *sys_; }

  /// Remembers `h` so the fixture stops it at the end.
  template <class Handle>
  Handle track(Handle h) {
    spawned_.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  template <class F, class... Ts>
  auto spawn(F fun, Ts&&... xs) {
    return track(sys_->spawn(fun, std::forward<Ts>(xs)...));
  }

  /// Sends a request from a helper actor, runs every job, and returns the
  /// answer (nullopt and `error` set if the request failed).
  template <class R, class Handle, class... Ts>
  std::optional<R> ask(const Handle& target, Ts... xs) {
    auto result = std::make_shared<std::optional<R>>();
    auto failure = std::make_shared<caf::error>();
    // The handle is passed as a spawn argument: a function actor spawned
    // without arguments trips a null dereference in CAF 0.17.6.
    spawn(
        [=](caf::event_based_actor* self, Handle to) {
          self->request(to, caf::infinite, xs...)
              .then([=](R& r) { *result = std::move(r); },
                    [=](caf::error& e) { *failure = std::move(e); });
        },
        target);
    sched_->run();
    last_error = *failure;
    return *result;
  }

  /// Runs one message of `who` (who must have one waiting).
  template <class Handle>
  void step(const Handle& who) {
    ASSERT_TRUE(sched_->prioritize(who)) << "actor has no job queued";
    sched_->run_once();
  }

  void run() { sched_->run(); }

  /// A strict mock of any actor interface: it handles what `expected` has
  /// handlers for, and any other message fails the test (naming the mock and
  /// the message). Assert on what the handlers record.
  template <class Handle>
  Handle strict_mock(const std::string& name, caf::behavior expected) {
    auto a = spawn(
        [expected](caf::event_based_actor* self, std::string who) -> caf::behavior {
          self->set_default_handler([who](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
            ADD_FAILURE() << who << " got a message the test did not expect: "
                          << caf::to_string(x.copy_content_to_message());
            return caf::sec::unexpected_message;
          });
          return expected;
        },
        name);
    return caf::actor_cast<Handle>(a);
  }

  /// True if `who` has a message waiting.
  template <class Handle>
  bool has_mail(const Handle& who) {
    return sched_->prioritize(who);
  }

  /// Moves virtual time forward and runs whatever that triggers.
  void advance(caf::timespan d) {
    sched_->advance_time(d);
    sched_->run();
  }

  caf::error last_error;

 private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  std::vector<caf::actor> spawned_;
};

/// A claimant that records every reply and delta it receives.
struct Recorder {
  std::vector<core::ClaimReply> claims;
  std::vector<core::ConfirmReply> confirms;
  std::vector<core::ReleaseReply> releases;
  std::vector<core::NodeDelta> deltas;
};

inline actors::claim_client_actor::behavior_type recording_client(
    actors::claim_client_actor::pointer, std::shared_ptr<Recorder> log) {
  return {
      [=](core::NodeDelta& d) { log->deltas.push_back(std::move(d)); },
      [=](core::ClaimReply& r) { log->claims.push_back(std::move(r)); },
      [=](core::ConfirmReply& r) { log->confirms.push_back(std::move(r)); },
      [=](core::ReleaseReply& r) { log->releases.push_back(std::move(r)); },
  };
}

}  // namespace claimsched::testing
