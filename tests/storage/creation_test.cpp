// Store creation is atomic: a directory holds no store or a complete one
// after a crash at any instant of its creation. These tests build, by hand,
// what a process killed at each step leaves behind and require the next open
// to succeed (and to hold nothing: nothing was acknowledged), while a store
// that belongs to someone else is still refused.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "storage/atomic_file.hpp"
#include "storage/crash_point.hpp"
#include "storage/keys.hpp"
#include "storage/node_store.hpp"
#include "storage/partition_store.hpp"
#include "tests/storage/storage_test_util.hpp"

namespace claimsched::storage {
namespace {

using namespace testing;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

/// A RocksDB database at `dir` with `column_families` and nothing in them:
/// what RocksDB leaves when the process dies between creating the families
/// and writing the identity.
void make_bare_database(const std::string& dir, const std::vector<std::string>& column_families) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  descs.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions{});
  for (const auto& n : column_families) descs.emplace_back(n, rocksdb::ColumnFamilyOptions{});
  std::vector<rocksdb::ColumnFamilyHandle*> hs;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir, descs, &hs, &raw).ok());
  for (auto* h : hs) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

std::vector<std::string> partition_families() {
  std::vector<std::string> out;
  for (auto n : PartitionStore::layout().column_families) out.emplace_back(n);
  return out;
}

TEST(StoreCreation, ANewStoreLeavesNoTemporaryDirectoryBehind) {
  TempDir tmp;
  {
    auto s = PartitionStore::open(tmp / "p1", partition_id());
    ASSERT_TRUE(s) << s.error().to_string();
    fill(**s, 1, 2, 2);
  }
  EXPECT_TRUE(fs::exists(tmp / "p1/CURRENT"));
  EXPECT_FALSE(fs::exists(tmp / "p1.creating"));
  auto again = PartitionStore::open(tmp / "p1", partition_id());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ((*again)->count()->jobs, 2u);
}

TEST(StoreCreation, AStoreKilledBeforeItsIdentityIsMadeAgainOnTheNextOpen) {
  TempDir tmp;
  // Killed after the column families, before the identity: only the
  // temporary directory exists, with a bare database in it.
  make_bare_database(tmp / "p1.creating", partition_families());
  auto s = PartitionStore::open(tmp / "p1", partition_id());
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_EQ((*s)->count()->jobs, 0u);
  EXPECT_FALSE(fs::exists(tmp / "p1.creating"));
}

TEST(StoreCreation, AStoreKilledAfterItsIdentityButBeforeTheRenameIsMadeAgain) {
  TempDir tmp;
  {
    auto s = PartitionStore::open(tmp / "made", partition_id());
    ASSERT_TRUE(s) << s.error().to_string();
  }
  // A whole store that never reached its name: nothing was acknowledged in
  // it, so the next open may start over.
  fs::rename(tmp / "made", tmp / "p1.creating");
  auto s = PartitionStore::open(tmp / "p1", partition_id());
  ASSERT_TRUE(s) << s.error().to_string();
  EXPECT_FALSE(fs::exists(tmp / "p1.creating"));
}

TEST(StoreCreation, AStoreKilledMidCreationOfAnotherKindIsMadeAgainToo) {
  TempDir tmp;
  std::vector<std::string> families;
  for (auto n : NodeStore::layout().column_families) families.emplace_back(n);
  families.pop_back();  // killed before the last family
  make_bare_database(tmp / "nodes.creating", families);
  auto s = NodeStore::open(tmp / "nodes", NodeStoreIdentity{"c1", "host-a"});
  ASSERT_TRUE(s) << s.error().to_string();
}

TEST(StoreCreation, AnEmptyDirectoryWaitingForTheStoreIsFilled) {
  TempDir tmp;
  fs::create_directories(tmp / "p1");  // the server makes it before the store
  auto s = PartitionStore::open(tmp / "p1", partition_id());
  ASSERT_TRUE(s) << s.error().to_string();
}

TEST(StoreCreation, ADirectoryHoldingOtherFilesIsRefusedAndKept) {
  TempDir tmp;
  fs::create_directories(tmp / "p1");
  { std::ofstream{tmp / "p1/notes.txt"} << "the operator's file"; }
  auto s = PartitionStore::open(tmp / "p1", partition_id());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, core::Errc::io_error);
  EXPECT_THAT(s.error().message, HasSubstr(tmp / "p1"));
  EXPECT_TRUE(fs::exists(tmp / "p1/notes.txt"));
}

TEST(StoreCreation, AHalfMadeStoreInPlaceIsStillRefusedAsForeign) {
  // Only a store of this build's making is known to be ours: a bare RocksDB
  // database at the store's own path may be anyone's, and it is refused with
  // the message that names its column families (and nothing is written).
  TempDir tmp;
  make_bare_database(tmp / "p1", {"jobs", "tasks"});
  auto s = PartitionStore::open(tmp / "p1", partition_id());
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("column families [default, jobs, tasks]"));
}

TEST(AtomicFile, ReplacesTheWholeFileAndLeavesNoTemporary) {
  TempDir tmp;
  ASSERT_OK(write_file_atomically(tmp / "run.json", "{\"a\":1}\n"));
  ASSERT_OK(write_file_atomically(tmp / "run.json", "{\"a\":2}\n"));
  std::ifstream in(tmp / "run.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"a\":2}\n");
  EXPECT_FALSE(fs::exists(tmp / "run.json.tmp"));
}

TEST(AtomicFile, AnUnwritablePlaceIsAnErrorNamingTheFile) {
  TempDir tmp;
  auto st = write_file_atomically(tmp / "absent/run.json", "x");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, core::Errc::io_error);
  EXPECT_THAT(st.error().message, HasSubstr(tmp / "absent/run.json"));
}

TEST(CrashPoints, EveryPointHasAUniqueDottedName) {
  auto points = crash::all_points();
  std::set<std::string_view> seen(points.begin(), points.end());
  EXPECT_EQ(seen.size(), points.size());
  for (auto p : points) EXPECT_NE(p.find('.'), std::string_view::npos) << p;
  // Without the variable set, reaching a point does nothing.
  for (auto p : points) crash::point(p);
}

}  // namespace
}  // namespace claimsched::storage
