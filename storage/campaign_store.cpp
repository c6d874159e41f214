#include "storage/campaign_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <charconv>
#include <sstream>

#include "storage/database.hpp"
#include "storage/keys.hpp"
#include "storage/partition_store.hpp"

namespace claimsched::storage {

namespace {

constexpr char kCampaignTag = 'c';
constexpr char kCopyTag = 'j';

std::string campaign_key(uint64_t id) {
  std::string key(9, '\0');
  key[0] = kCampaignTag;
  keys::put_u64(key.data() + 1, id);
  return key;
}

std::string copy_key(uint64_t campaign, core::JobId job) {
  std::string key(17, '\0');
  key[0] = kCopyTag;
  keys::put_u64(key.data() + 1, campaign);
  keys::put_u64(key.data() + 9, job.value);
  return key;
}

std::string encode(const StoredCampaign& c) {
  return std::to_string(c.sequence) + "\n" + std::to_string(c.submitted_at.count()) + "\n" +
         (c.cancelled ? "1" : "0") + "\n" + c.spec_json;
}

std::string encode(const StoredCopy& c) {
  return std::to_string(c.index) + "\n" + c.pool + "\n" + (c.replica ? "1" : "0") + "\n" +
         std::to_string(c.dispatched.count()) + "\n" + std::to_string(static_cast<int>(c.state));
}

/// Splits off the first `n` lines; the rest (which may hold newlines) last.
std::vector<std::string_view> lines(std::string_view text, size_t n) {
  std::vector<std::string_view> out;
  while (out.size() < n) {
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) break;
    out.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  out.push_back(text);
  return out;
}

template <class T>
bool number(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

core::Error corrupt(const std::string& path, std::string_view key, std::string_view what) {
  std::ostringstream hex;
  for (unsigned char ch : key) hex << "0123456789abcdef"[ch >> 4] << "0123456789abcdef"[ch & 15];
  return core::make_error(core::Errc::corrupt,
                          "corrupt campaign record in " + path + " (key " + hex.str() + "): " + std::string(what));
}

}  // namespace

CampaignStore::~CampaignStore() = default;

core::Expected<std::unique_ptr<CampaignStore>> CampaignStore::open(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return from_rocksdb(s, "open the campaign store", dir);
  std::unique_ptr<CampaignStore> store{new CampaignStore};
  store->path_ = dir;
  store->db_.reset(raw);
  return store;
}

std::unique_ptr<CampaignStore> CampaignStore::in_partition(std::shared_ptr<PartitionStore> partition,
                                                           AwaitReplication replicated) {
  std::unique_ptr<CampaignStore> store{new CampaignStore};
  store->path_ = partition->path() + " (campaign records)";
  store->partition_ = std::move(partition);
  store->replicated_ = std::move(replicated);
  return store;
}

core::Status CampaignStore::write_in_partition(rocksdb::WriteBatch batch) {
  auto& db = partition_->database();
  if (auto st = db.write(std::move(batch)); !st) return st;
  // At least this write's last sequence (later writes of the partition too).
  return replicated_ ? replicated_(db.latest_sequence()) : core::Status::ok();
}

core::Status CampaignStore::put(const StoredCampaign& campaign) {
  if (partition_) {
    auto& db = partition_->database();
    rocksdb::WriteBatch batch;
    batch
        .Put(db.handle(PartitionStore::kMeta), std::string(keys::kCampaignPrefix) + campaign_key(campaign.id),
             encode(campaign))
        .PermitUncheckedError();
    return write_in_partition(std::move(batch));
  }
  rocksdb::WriteOptions sync;
  sync.sync = true;
  auto s = db_->Put(sync, campaign_key(campaign.id), encode(campaign));
  if (!s.ok()) return from_rocksdb(s, "write a campaign to", path_);
  return core::Status::ok();
}

core::Status CampaignStore::put(const std::vector<StoredCopy>& copies) {
  if (copies.empty()) return core::Status::ok();
  rocksdb::WriteBatch batch;
  if (partition_) {
    auto& db = partition_->database();
    for (const auto& c : copies)
      batch
          .Put(db.handle(PartitionStore::kMeta), std::string(keys::kCampaignPrefix) + copy_key(c.campaign, c.job),
               encode(c))
          .PermitUncheckedError();
    return write_in_partition(std::move(batch));
  }
  for (const auto& c : copies) batch.Put(copy_key(c.campaign, c.job), encode(c)).PermitUncheckedError();
  rocksdb::WriteOptions sync;
  sync.sync = true;
  auto s = db_->Write(sync, &batch);
  if (!s.ok()) return from_rocksdb(s, "write campaign task copies to", path_);
  return core::Status::ok();
}

core::Status CampaignStore::read_record(std::string_view key, std::string_view value, Contents& out) const {
  if (key.size() == 9 && key[0] == kCampaignTag) {
    StoredCampaign c;
    c.id = keys::get_u64(key.data() + 1);
    auto f = lines(value, 3);
    int64_t at = 0;
    if (f.size() != 4 || !number(f[0], c.sequence) || !number(f[1], at) || (f[2] != "0" && f[2] != "1"))
      return corrupt(path_, key, "expected sequence, submission time, cancelled and the campaign's JSON");
    c.submitted_at = core::TimePoint{at};
    c.cancelled = f[2] == "1";
    c.spec_json = std::string(f[3]);
    out.campaigns.push_back(std::move(c));
  } else if (key.size() == 17 && key[0] == kCopyTag) {
    StoredCopy c;
    c.campaign = keys::get_u64(key.data() + 1);
    c.job = core::JobId{keys::get_u64(key.data() + 9)};
    auto f = lines(value, 4);
    int64_t at = 0;
    int state = 0;
    if (f.size() != 5 || !number(f[0], c.index) || f[1].empty() || (f[2] != "0" && f[2] != "1") || !number(f[3], at) ||
        !number(f[4], state) || state < 0 || state > 2)
      return corrupt(path_, key, "expected index, pool, replica, dispatch time and state");
    c.pool = std::string(f[1]);
    c.replica = f[2] == "1";
    c.dispatched = core::TimePoint{at};
    c.state = static_cast<StoredCopy::State>(state);
    out.copies[c.campaign].push_back(std::move(c));
  } else {
    return corrupt(path_, key, "not a campaign or task copy key");
  }
  return core::Status::ok();
}

core::Expected<CampaignStore::Contents> CampaignStore::load() const {
  Contents out;
  if (partition_) {
    // The prefix's range: "campaign/" up to "campaign0" ('/' + 1).
    std::string lower(keys::kCampaignPrefix);
    std::string upper = lower;
    upper.back() = static_cast<char>(upper.back() + 1);
    auto st = partition_->database().scan(PartitionStore::kMeta, lower, upper,
                                          [&](std::string_view key, std::string_view value) {
                                            return read_record(key.substr(lower.size()), value, out);
                                          });
    if (!st) return st.error();
    return out;
  }
  std::unique_ptr<rocksdb::Iterator> it{db_->NewIterator(rocksdb::ReadOptions())};
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    std::string_view value(it->value().data(), it->value().size());
    if (auto st = read_record(key, value, out); !st) return st.error();
  }
  if (!it->status().ok()) return from_rocksdb(it->status(), "read the campaign store", path_);
  return out;
}

}  // namespace claimsched::storage
