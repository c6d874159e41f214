#include "actors/partition.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "actors/clock.hpp"
#include "storage/journal.hpp"

namespace claimsched::actors {

storage::StoreOptions logged_store_options(storage::SyncMode sync) {
  storage::StoreOptions o;
  o.sync = sync;
  o.log_level = storage::RocksLogLevel::error;
  o.log = [](storage::RocksLogLevel level, std::string_view path, std::string_view line) {
    spdlog::log(level >= storage::RocksLogLevel::error ? spdlog::level::err : spdlog::level::warn,
                "rocksdb {}: {}", path, line);
  };
  return o;
}

core::Status PartitionSetup::validate() const {
  auto bad = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (!store_dir.empty() && log) return bad("partition: a store directory and an injected log exclude each other");
  if (recover && store_dir.empty()) return bad("partition: recovery needs a store directory");
  if (change_feed && store_dir.empty()) return bad("partition: a change feed needs a store directory");
  if (ack != AckMode::owner && !change_feed) return bad("partition: ack \"" + std::string(to_string(ack)) +
                                                        "\" needs a change feed (standbys to wait for)");
  if (!store_dir.empty() && identity.cluster_id.empty()) return bad("partition: the store needs a cluster id");
  if (!store_dir.empty())
    if (auto st = store_options.validate(); !st) return st;
  if (!recover)
    if (auto st = actor.scheduler.validate(); !st) return st;
  return core::Status::ok();
}

core::Expected<AssembledPartition> assemble_partition(caf::actor_system& sys, PartitionSetup setup) {
  if (auto st = setup.validate(); !st) return st.error();
  AssembledPartition out;
  out.id = setup.actor.scheduler.partition;
  auto& ac = setup.actor;
  if (!setup.store_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(setup.store_dir, ec);
    if (ec) return core::make_error(core::Errc::io_error, "cannot create " + setup.store_dir + ": " + ec.message());
    auto options = setup.store_options;
    if (setup.change_feed) out.relay = CommitRelay::attach(options);
    auto store = storage::PartitionStore::open(setup.store_dir, setup.identity, options);
    if (!store) return store.error();
    out.store = std::move(*store);
    if (setup.recover) {
      auto recovered = storage::recover_partition(*out.store, ac.scheduler, now(sys));
      if (!recovered) return recovered.error();
      out.recovered_jobs = recovered->jobs;
      out.recovered_task_records = recovered->task_records;
      out.unverified_tasks = recovered->unverified_tasks;
      out.removed_pools = recovered->removed_pools;
      for (const auto& pool : recovered->removed_pools)
        if (std::find(ac.scheduler.pools.begin(), ac.scheduler.pools.end(), pool) != ac.scheduler.pools.end())
          spdlog::warn("partition {}: pool {} was removed (claimsched pool remove) and stays removed; delete it "
                       "from the config file",
                       out.id.value, pool);
      out.recovery_time = recovered->duration;
      // The fence is the only write so far: this epoch begins here.
      out.first_sequence = out.store->latest_sequence();
      ac.restored = std::move(recovered->scheduler);
    }
    ac.log = std::make_shared<storage::RocksPartitionLog>(out.store);
  } else if (setup.log) {
    ac.log = setup.log;
  }
  out.epoch = ac.restored ? ac.restored->config().epoch : ac.scheduler.epoch;
  if (ac.restored) ac.restored->for_each_job([&](const core::JobRecord& j) { out.jobs.push_back(j.spec.id); });
  ac.await_replication = setup.ack != AckMode::owner;
  auto scheduler = spawn_scheduler(sys, std::move(ac));
  if (!scheduler) return scheduler.error();
  out.scheduler = *scheduler;
  if (setup.change_feed) {
    ChangeFeedConfig fc;
    fc.primary = out.store;
    fc.scheduler = out.scheduler;
    fc.ack = setup.ack;
    if (setup.ack != AckMode::owner) out.replicated = fc.replicated_out = std::make_shared<std::atomic<uint64_t>>(0);
    fc.history = std::move(setup.history);
    // Replicas of an older epoch that hold this epoch's first sequence
    // diverged from it (core::consistent_with_history).
    if (setup.recover) fc.history.push_back({out.epoch, out.first_sequence});
    fc.checkpoint_dir = setup.checkpoint_dir.empty() ? setup.store_dir + ".checkpoints" : setup.checkpoint_dir;
    auto feed = spawn_change_feed(sys, std::move(fc));
    if (!feed) {
      disassemble_partition(sys, out);
      return feed.error();
    }
    out.feed = *feed;
    out.relay->forward_to(out.feed);
  }
  return out;
}

void disassemble_partition(caf::actor_system& sys, AssembledPartition& p) {
  if (p.relay) p.relay->forward_to(change_feed_actor{});
  caf::scoped_actor self{sys};
  for (auto handle : {caf::actor_cast<caf::actor>(p.feed), caf::actor_cast<caf::actor>(p.scheduler)}) {
    if (!handle) continue;
    self->send_exit(handle, caf::exit_reason::user_shutdown);
    self->wait_for(handle);
  }
  p.feed = nullptr;
  p.scheduler = nullptr;
  p.relay.reset();
  p.store.reset();
}

}  // namespace claimsched::actors
