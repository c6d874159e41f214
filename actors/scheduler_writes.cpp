#include "actors/scheduler_writes.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/clock.hpp"
#include "storage/journal.hpp"

namespace claimsched::actors {

namespace {

/// Sends what waited for a write: its confirms, then its acknowledgements.
void release_write(scheduler_self self, PendingWrite& done) {
  send_confirms(self, done.confirms);
  for (auto& [id, promise] : done.acks) promise.deliver(id);
  for (auto& [ids, promise] : done.batch_acks) promise.deliver(ids);
  for (auto& [promise, words] : done.replies) promise.deliver(words);
}

/// Releases the durable writes the standbys now hold, oldest first.
void release_replicated(scheduler_self self) {
  auto& st = self->state;
  while (!st.replicating.empty() && st.replicating.front().sequence <= st.replicated_sequence) {
    release_write(self, st.replicating.front());
    st.replicating.pop_front();
  }
}

}  // namespace

node_actor* node_handle(scheduler_self self, core::NodeId id) {
  auto n = self->state.core->view().find_node(id);
  if (!n || *n >= self->state.nodes.size() || !self->state.nodes[*n]) return nullptr;
  return &self->state.nodes[*n];
}

void send_confirms(scheduler_self self, std::vector<core::ConfirmRequest>& confirms) {
  for (auto& c : confirms)
    if (auto* n = node_handle(self, c.node)) self->send(*n, std::move(c));
  confirms.clear();
}

void submit_write(scheduler_self self) {
  auto& st = self->state;
  if (st.writing.size() >= st.max_writes_in_flight) return;
  if (st.journals.empty() && st.assembling.empty()) return;
  auto me = caf::actor_cast<scheduler_actor>(self);
  st.log->submit(std::move(st.journals), st.core->config().epoch, wall_now(), [me](core::Expected<uint64_t> sequence) {
    if (sequence)
      caf::anon_send(me, durable_atom::value, *sequence, std::string());
    else
      caf::anon_send(me, durable_atom::value, uint64_t{0}, sequence.error().to_string());
  });
  ++st.writes_submitted;
  st.journals.clear();
  st.writing.push_back(std::move(st.assembling));
  st.assembling = PendingWrite{};
}

void stop_on_store_failure(scheduler_self self, const std::string& why) {
  auto& st = self->state;
  if (!st.store_error.empty()) return;
  st.store_error = why;
  spdlog::critical("{}: its store failed, the partition stops: {}", st.log_name, why);
  auto err = messages::to_caf_error(
      core::make_error(core::Errc::io_error, "partition " + st.log_name + " cannot store jobs: " + why));
  auto fail = [&](PendingWrite& w) {
    for (auto& [id, promise] : w.acks) promise.deliver(err);
    for (auto& [ids, promise] : w.batch_acks) promise.deliver(err);
    for (auto& [promise, words] : w.replies) promise.deliver(err);
  };
  for (auto* queue : {&st.writing, &st.replicating})
    for (auto& w : *queue) fail(w);
  fail(st.assembling);
  for (auto& [id, promise] : st.operation_waiters) promise.deliver(err);
  st.operation_waiters.clear();
  st.writing.clear();
  st.replicating.clear();
  st.assembling = PendingWrite{};
  st.journals.clear();
  st.started = false;
}

void on_write_durable(scheduler_self self, uint64_t sequence, const std::string& error) {
  auto& st = self->state;
  if (!error.empty()) {
    stop_on_store_failure(self, error);
    return;
  }
  if (st.writing.empty()) return;  // stopped meanwhile
  ++st.writes_completed;
  // Writes complete in submission order.
  PendingWrite done = std::move(st.writing.front());
  st.writing.pop_front();
  st.durable_sequence = std::max(st.durable_sequence, sequence);
  done.sequence = sequence;
  if (st.await_replication) {
    st.replicating.push_back(std::move(done));
    release_replicated(self);
  } else {
    release_write(self, done);
  }
  submit_write(self);
}

void on_replicated(scheduler_self self, uint64_t sequence) {
  auto& st = self->state;
  if (sequence <= st.replicated_sequence) return;
  st.replicated_sequence = sequence;
  release_replicated(self);
}

PendingWrite* write_holding(scheduler_state& st, const std::vector<core::JobId>& jobs) {
  auto named = [&](core::JobId id) { return std::find(jobs.begin(), jobs.end(), id) != jobs.end(); };
  auto holds = [&](const PendingWrite& w) {
    return std::any_of(w.acks.begin(), w.acks.end(), [&](const auto& a) { return named(a.first); }) ||
           std::any_of(w.batch_acks.begin(), w.batch_acks.end(),
                       [&](const auto& a) { return std::any_of(a.first.begin(), a.first.end(), named); });
  };
  // Newest first: the assembling write, then those in flight from the newest.
  if (holds(st.assembling)) return &st.assembling;
  for (auto* queue : {&st.writing, &st.replicating})
    for (auto w = queue->rbegin(); w != queue->rend(); ++w)
      if (holds(*w)) return &*w;
  return nullptr;
}

}  // namespace claimsched::actors
