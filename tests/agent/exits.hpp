#pragma once

// Records every task end a ProcessSupervisor reports; tests wait on it. Must
// outlive the supervisor (its destructor reports what it kills).

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "agent/process_supervisor.hpp"

namespace claimsched::agent::test_support {

class Exits {
 public:
  ProcessSupervisor::OnExit callback() {
    return [this](uint64_t handle, TaskExit exit) {
      std::lock_guard lock(mutex_);
      exits_[handle].push_back(std::move(exit));
      threads_.insert(std::this_thread::get_id());
      ++total_;
      changed_.notify_all();
    };
  }

  /// The first end reported for `handle`, or nullopt after `timeout`.
  std::optional<TaskExit> wait(uint64_t handle, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return exits_.contains(handle); })) return std::nullopt;
    return exits_[handle].front();
  }

  bool wait_total(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return total_ >= n; });
  }

  bool ended(uint64_t handle) { return count(handle) > 0; }
  size_t count(uint64_t handle) {
    std::lock_guard lock(mutex_);
    auto it = exits_.find(handle);
    return it == exits_.end() ? 0 : it->second.size();
  }
  size_t total() {
    std::lock_guard lock(mutex_);
    return total_;
  }
  std::set<std::thread::id> threads() {
    std::lock_guard lock(mutex_);
    return threads_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, std::vector<TaskExit>> exits_;
  std::set<std::thread::id> threads_;
  size_t total_ = 0;
};

}  // namespace claimsched::agent::test_support
