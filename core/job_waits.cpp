#include "core/job_waits.hpp"

#include <algorithm>

namespace claimsched::core {

JobWaits::Key JobWaits::add(std::span<const JobId> jobs) {
  Key key = next_++;
  std::vector<JobId> unique(jobs.begin(), jobs.end());
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  names_ += unique.size();
  if (unique.size() > kIndexedJobsPerWait)
    big_.push_back(key);
  else
    for (auto id : unique) by_job_[id].push_back(key);
  waits_.emplace(key, std::move(unique));
  return key;
}

std::vector<JobWaits::Key> JobWaits::touched_by(std::span<const JobId> jobs) const {
  std::vector<Key> keys;
  for (auto id : jobs)
    if (auto it = by_job_.find(id); it != by_job_.end()) keys.insert(keys.end(), it->second.begin(), it->second.end());
  for (auto key : big_) {
    const auto& mine = waits_.at(key);
    auto named = [&](JobId id) {
      return id >= mine.front() && id <= mine.back() && std::binary_search(mine.begin(), mine.end(), id);
    };
    if (std::any_of(jobs.begin(), jobs.end(), named)) keys.push_back(key);
  }
  // Keys grow with each add: sorted is the order they were added.
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

const std::vector<JobId>* JobWaits::jobs_of(Key key) const {
  auto it = waits_.find(key);
  return it == waits_.end() ? nullptr : &it->second;
}

std::vector<JobId> JobWaits::named_by(Key key, std::span<const JobId> jobs) const {
  std::vector<JobId> out;
  const auto* mine = jobs_of(key);
  if (!mine) return out;
  for (auto id : jobs)
    if (std::binary_search(mine->begin(), mine->end(), id)) out.push_back(id);
  return out;
}

void JobWaits::remove(Key key) {
  auto it = waits_.find(key);
  if (it == waits_.end()) return;
  names_ -= it->second.size();
  if (it->second.size() > kIndexedJobsPerWait) {
    std::erase(big_, key);
    waits_.erase(it);
    return;
  }
  for (auto id : it->second) {
    auto j = by_job_.find(id);
    if (j == by_job_.end()) continue;
    std::erase(j->second, key);
    if (j->second.empty()) by_job_.erase(j);
  }
  waits_.erase(it);
}

}  // namespace claimsched::core
