#pragma once

// The server's campaign store (issue 16): one durable record per campaign
// and one per task copy it dispatched, so that a restarted server rebuilds
// every campaign's progress, sends no index twice and finishes it.
//
// A plain RocksDB database (no column families, no partition identity: it
// belongs to the server process, not to a partition) in `<data_dir>/campaigns`.
// Keys are big-endian, so a campaign's copies are one contiguous range:
//
// | key                                       | value            |
// |-------------------------------------------|------------------|
// | 'c', campaign id (u64)                    | StoredCampaign   |
// | 'j', campaign id (u64), job id (u64)      | StoredCopy       |
//
// Values are short text records, one field per line (the spec last, as the
// JSON the client sent).
//
// In an HA cluster the same records live in a partition's store instead
// (in_partition): in its meta column family behind keys::kCampaignPrefix,
// written through the partition's writer, so the change feed ships them to
// the partition's standbys and whichever member owns that partition next
// rebuilds the campaigns from its copy. Every write is synced before it returns: a copy is
// recorded before its job is sent, so a crash between the two sends the same
// job id again after the restart, which the gateway answers as the same job.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ids.hpp"

namespace rocksdb {
class DB;
class WriteBatch;
}

namespace claimsched::storage {

class PartitionStore;

struct StoredCampaign {
  uint64_t id = 0;
  /// Submission order among campaigns (FIFO).
  uint64_t sequence = 0;
  core::TimePoint submitted_at{0};
  bool cancelled = false;
  /// The campaign as the client sent it (JSON with the campaign file's
  /// keys), read again through the same reader on restart.
  std::string spec_json;
};

/// One task copy sent as a job.
struct StoredCopy {
  uint64_t campaign = 0;
  core::JobId job;
  uint32_t index = 0;
  std::string pool;
  bool replica = false;
  core::TimePoint dispatched{0};
  /// live: followed; succeeded: its index is done by it; ended: failed,
  /// cancelled or withdrawn, history only.
  enum class State : uint8_t { live, succeeded, ended } state = State::live;
};

class CampaignStore {
 public:
  /// Opens or creates the store in `dir`; the error names the directory.
  static core::Expected<std::unique_ptr<CampaignStore>> open(const std::string& dir);
  /// Blocks until the partition's standbys hold its store up to the given
  /// sequence (the [ha] ack rule), or says why not.
  using AwaitReplication = std::function<core::Status(uint64_t sequence)>;
  /// The records inside `partition`'s store (HA, see above); writes are
  /// durable under that store's sync mode, and replicated through
  /// `replicated` when set, when they return: the next owner knows every
  /// copy whose job was sent. The partition's store stays open while this
  /// lives.
  static std::unique_ptr<CampaignStore> in_partition(std::shared_ptr<PartitionStore> partition,
                                                     AwaitReplication replicated = {});
  ~CampaignStore();
  CampaignStore(const CampaignStore&) = delete;
  CampaignStore& operator=(const CampaignStore&) = delete;

  core::Status put(const StoredCampaign& campaign);
  /// Several copies in one synced write (a round's dispatch).
  core::Status put(const std::vector<StoredCopy>& copies);

  struct Contents {
    std::vector<StoredCampaign> campaigns;
    /// Per campaign id, its copies in job id order.
    std::map<uint64_t, std::vector<StoredCopy>> copies;
  };
  /// Everything, for a restart; a record that does not read is Errc::corrupt
  /// naming its key.
  core::Expected<Contents> load() const;

  const std::string& path() const { return path_; }

 private:
  CampaignStore() = default;
  /// One record of load(), its key without the HA prefix.
  core::Status read_record(std::string_view key, std::string_view value, Contents& out) const;
  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  /// Set instead of db_ (in_partition).
  std::shared_ptr<PartitionStore> partition_;
  AwaitReplication replicated_;
  /// A write to the partition's store, then the wait for its standbys.
  core::Status write_in_partition(rocksdb::WriteBatch batch);
};

}  // namespace claimsched::storage
