#include "agent/machine.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace claimsched::agent {
namespace {

namespace fs = std::filesystem;

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("claimsched-agent-proc-" + std::to_string(::getpid()));
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(root_ / name) << text; }

  fs::path root_;
};

TEST(MachineTest, DetectsPositiveCapacity) {
  auto capacity = detect_machine_capacity();
  ASSERT_TRUE(capacity) << capacity.error().to_string();
  EXPECT_GE((*capacity)[core::dim::cpu], 1000);
  EXPECT_EQ((*capacity)[core::dim::cpu] % 1000, 0);
  EXPECT_GT((*capacity)[core::dim::memory], int64_t{64} << 20);
  EXPECT_EQ((*capacity)[core::dim::gpu], 0);
}

TEST(MachineTest, HostNameIsNotEmpty) { EXPECT_FALSE(host_name().empty()); }

TEST_F(FakeProc, ReadsMemTotal) {
  write("meminfo", "MemFree:         1000 kB\nMemTotal:       2048 kB\n");
  auto capacity = detect_machine_capacity(root_);
  ASSERT_TRUE(capacity) << capacity.error().to_string();
  EXPECT_EQ((*capacity)[core::dim::memory], 2048 * 1024);
  EXPECT_GE((*capacity)[core::dim::cpu], 1000);
}

TEST_F(FakeProc, UnreadableProcIsAnError) {
  auto capacity = detect_machine_capacity(root_ / "missing");
  ASSERT_FALSE(capacity);
  EXPECT_EQ(capacity.error().code, core::Errc::io_error);
  EXPECT_NE(capacity.error().message.find("meminfo"), std::string::npos);
}

TEST_F(FakeProc, MalformedMeminfoIsAnError) {
  write("meminfo", "MemFree: 1000 kB\n");
  auto capacity = detect_machine_capacity(root_);
  ASSERT_FALSE(capacity);
  EXPECT_EQ(capacity.error().code, core::Errc::corrupt);
  write("meminfo", "MemTotal: lots\n");
  capacity = detect_machine_capacity(root_);
  ASSERT_FALSE(capacity);
  EXPECT_EQ(capacity.error().code, core::Errc::corrupt);
}

}  // namespace
}  // namespace claimsched::agent
