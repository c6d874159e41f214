// messages/caf_types + register + errors: every registered value survives
// CAF's binary serializer (what the middleman does between processes), a
// payload that is not a valid encoding becomes a caf::error of our category,
// and a ClaimRequest really crosses a loopback connection between two actor
// systems.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <caf/io/all.hpp>
#include <chrono>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "messages/caf_types.hpp"
#include "tests/messages/samples.hpp"

namespace claimsched::messages::samples {

/// What a broken or hostile peer sends: registered under ClaimRequest's name,
/// it serializes exactly like the real type (one byte string) but carries
/// bytes the test chooses.
struct FakeClaimRequest {
  std::string bytes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, FakeClaimRequest& x) {
  return f(caf::meta::type_name("FakeClaimRequest"), x.bytes);
}

}  // namespace claimsched::messages::samples

CAF_BEGIN_TYPE_ID_BLOCK(claimsched_messages_test, caf::id_block::claimsched::end)
CAF_ADD_TYPE_ID(claimsched_messages_test, (claimsched::messages::samples::FakeClaimRequest))
CAF_END_TYPE_ID_BLOCK(claimsched_messages_test)

namespace claimsched::messages {
namespace {

using namespace samples;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

/// The name CAF knows ClaimRequest by (the type-id block's spelling).
constexpr const char* kClaimRequestName = "claimsched::core::ClaimRequest";

struct Config : caf::actor_system_config {
  /// `network` loads the middleman with heartbeats (dependencies.md);
  /// `fake_claims` makes FakeClaimRequest travel as a ClaimRequest.
  explicit Config(bool network = false, bool fake_claims = false) {
    set("scheduler.max-threads", 2);
    register_types(*this);
    if (fake_claims) add_message_type<FakeClaimRequest>(kClaimRequestName);
    if (network) {
      load<caf::io::middleman>();
      set("middleman.heartbeat-interval", caf::timespan{250ms});
      set("middleman.connection-timeout", caf::timespan{2s});
    }
  }
};

std::vector<char> serialize(caf::actor_system& sys, caf::message msg) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto err = sink(msg);
  EXPECT_FALSE(err) << sys.render(err);
  return buf;
}

/// What the middleman does with a payload (`source(stages, msg)` in
/// caf/io/basp/remote_message_handler.hpp). In CAF 0.17.6 this never reports
/// an element's load error: such a message comes out empty (caf_types.hpp).
caf::error deserialize(caf::actor_system& sys, const std::vector<char>& buf, caf::message& out) {
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(out)) return err;
  if (source.remaining() != 0) return caf::make_error(caf::sec::runtime_error, "trailing bytes");
  return caf::none;
}

/// The same bytes through caf::message::load, which does return the error.
caf::error load_message(caf::actor_system& sys, const std::vector<char>& buf, caf::message& out) {
  caf::binary_deserializer source{sys, buf};
  return out.load(source);
}

/// Collects what the decode-failure hook reports (a plain function pointer).
struct HookLog {
  static std::mutex mutex;
  static std::vector<std::string> errors;
  static void hook(const core::Error& e) {
    std::lock_guard<std::mutex> guard{mutex};
    errors.push_back(e.to_string());
  }
  static std::vector<std::string> take() {
    std::lock_guard<std::mutex> guard{mutex};
    return std::exchange(errors, {});
  }
};
std::mutex HookLog::mutex;
std::vector<std::string> HookLog::errors;

// -- (b) every registered type through CAF's serializer -----------------------

template <class T>
class CafTyped : public ::testing::Test {
 protected:
  Config cfg_;
  caf::actor_system sys_{cfg_};
};

template <class T>
T caf_sample() {
  return sample<T>();
}
template <>
core::NodeId caf_sample<core::NodeId>() {
  return core::NodeId{4'000'000'123u};
}
template <>
core::JobId caf_sample<core::JobId>() {
  return core::JobId{0xDEAD'BEEF'0000'0001ULL};
}
template <>
messages::ChangeBatch caf_sample<messages::ChangeBatch>() {
  messages::ChangeBatch b;
  b.sequence = 1'000'000'007;
  b.count = 3;
  static constexpr char kBytes[] = "\x01\x02\x00 not parsed here";
  b.data = std::string(kBytes, sizeof(kBytes) - 1);  // keeps the embedded NUL
  return b;
}

// Exactly the types of the claimsched type-id block.
using CafTypes =
    ::testing::Types<core::NodeId, core::JobId, core::NodeSpec, core::NodeSnapshot, core::JobSpec,
                     core::ClaimRequest, core::ClaimReply, core::ConfirmRequest, core::ConfirmReply,
                     core::ReleaseRequest, core::ReleaseReply, core::NodeDelta, core::NodeReport,
                     messages::ChangeBatch, core::JobView, core::NodeStatus, core::JobFilter,
                     core::LogRequest, core::LogChunk, core::campaign::CampaignRequest,
                     core::campaign::CampaignReply>;

struct CafTypeNames {
  template <class T>
  static std::string GetName(int) {
    std::string name = caf::type_name_by_id<caf::type_id<T>::value>::value;
    return name.substr(name.rfind(':') + 1);
  }
};

TYPED_TEST_SUITE(CafTyped, CafTypes, CafTypeNames);

static_assert(caf::id_block::claimsched::end - caf::id_block::claimsched::begin == 21,
              "CafTypes must list every type of the claimsched block");

TYPED_TEST(CafTyped, RoundTripThroughBinarySerializer) {
  const TypeParam in = caf_sample<TypeParam>();
  auto buf = serialize(this->sys_, caf::make_message(in));
  caf::message out;
  auto err = deserialize(this->sys_, buf, out);
  ASSERT_FALSE(err) << this->sys_.render(err);
  ASSERT_TRUE(out.match_elements<TypeParam>()) << caf::to_string(out);
  EXPECT_EQ(out.get_as<TypeParam>(0), in);
}

TYPED_TEST(CafTyped, RoundTripBetweenTwoSystems) {
  // The receiving system is a different config instance: only the names of
  // the type-id block connect the two, as between processes.
  Config other_cfg;
  caf::actor_system other{other_cfg};
  const TypeParam in = caf_sample<TypeParam>();
  auto buf = serialize(this->sys_, caf::make_message(in));
  caf::message out;
  auto err = deserialize(other, buf, out);
  ASSERT_FALSE(err) << other.render(err);
  ASSERT_TRUE(out.match_elements<TypeParam>());
  EXPECT_EQ(out.get_as<TypeParam>(0), in);
}

TYPED_TEST(CafTyped, StringificationDoesNotCrash) {
  // CAF's to_string goes through inspect too (without the save callback, so
  // the payload prints empty; logs should print core values themselves).
  auto text = caf::to_string(caf::make_message(caf_sample<TypeParam>()));
  EXPECT_FALSE(text.empty());
}

TEST(Caf, MessageWithSeveralElements) {
  Config cfg;
  caf::actor_system sys{cfg};
  using claim_atom = caf::atom_constant<caf::atom("claim")>;
  auto claim = sample_claim();
  auto job = sample_job();
  auto buf = serialize(sys, caf::make_message(claim_atom::value, claim, core::NodeId{9}, job));
  caf::message out;
  auto err = deserialize(sys, buf, out);
  ASSERT_FALSE(err) << sys.render(err);
  ASSERT_TRUE((out.match_elements<claim_atom, core::ClaimRequest, core::NodeId, core::JobSpec>()));
  EXPECT_EQ(out.get_as<core::ClaimRequest>(1), claim);
  EXPECT_EQ(out.get_as<core::NodeId>(2), core::NodeId{9});
  EXPECT_EQ(out.get_as<core::JobSpec>(3), job);
}

// -- (c) garbage payloads become caf::errors ----------------------------------

class CafGarbage : public ::testing::Test {
 protected:
  void SetUp() override {
    set_decode_failure_hook(&HookLog::hook);
    HookLog::take();
  }
  void TearDown() override { set_decode_failure_hook(nullptr); }

  /// A FakeClaimRequest serialized by the peer (as a ClaimRequest).
  std::vector<char> fake(const std::string& bytes) {
    return serialize(peer_, caf::make_message(FakeClaimRequest{bytes}));
  }

  /// Loads a fake in a system that knows only the real type: the error.
  caf::error receive_fake(const std::string& bytes) {
    caf::message out;
    auto err = load_message(sys_, fake(bytes), out);
    if (err) {
      EXPECT_TRUE(out.empty()) << "a message that failed to load holds " << caf::to_string(out);
    }
    return err;
  }

  Config cfg_;
  caf::actor_system sys_{cfg_};
  Config peer_cfg_{false, true};
  caf::actor_system peer_{peer_cfg_};
};

TEST_F(CafGarbage, FakeWithValidBytesIsIndistinguishable) {
  // Sanity check of the fixture: the fake's wire format is the real one.
  auto buf = fake(encode(sample_claim()));
  caf::message out;
  auto err = deserialize(sys_, buf, out);
  ASSERT_FALSE(err) << sys_.render(err);
  ASSERT_TRUE(out.match_elements<core::ClaimRequest>());
  EXPECT_EQ(out.get_as<core::ClaimRequest>(0), sample_claim());
}

TEST_F(CafGarbage, UnparseablePayloadIsAClaimschedError) {
  auto before = decode_failures();
  auto err = receive_fake(std::string("\xff\xff\xff", 3));
  ASSERT_TRUE(err);
  EXPECT_EQ(err.category(), kErrorCategory);
  auto e = from_caf_error(err, &sys_);
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_EQ(e.message,
            "claimsched.ClaimRequest: ClaimRequest: bytes are not a valid claimsched.pb.ClaimRequest");
  EXPECT_EQ(sys_.render(err),
            "claimsched: corrupt data: claimsched.ClaimRequest: ClaimRequest: bytes are not a valid "
            "claimsched.pb.ClaimRequest");
  // The hook saw the same error, and the failure was counted.
  EXPECT_EQ(HookLog::take(), std::vector<std::string>{"corrupt data: " + e.message});
  EXPECT_EQ(decode_failures(), before + 1);
}

TEST_F(CafGarbage, MiddlemanPathDeliversAnEmptyMessage) {
  // Pins CAF 0.17.6's behaviour (caf_types.hpp): deserializer(msg) swallows
  // the element's error and leaves the target as it was: empty in the
  // middleman, which deserializes into a fresh message. If this test fails
  // after a CAF upgrade, revisit reject_unexpected and the notes there.
  caf::message out;
  auto err = deserialize(sys_, fake("\xff"), out);
  EXPECT_FALSE(err);
  EXPECT_TRUE(out.empty()) << caf::to_string(out);
  caf::message reused = caf::make_message(1, 2, 3);
  EXPECT_FALSE(deserialize(sys_, fake("\xff"), reused));
  EXPECT_EQ(caf::to_string(reused), "(1, 2, 3)");
  EXPECT_EQ(HookLog::take().size(), 2u);  // the reason is only seen by the hook
}

TEST_F(CafGarbage, InvalidFieldIsNamed) {
  auto claim = sample_claim();
  claim.tasks.clear();
  auto err = receive_fake(encode(claim));
  ASSERT_TRUE(err);
  auto e = from_caf_error(err, &sys_);
  EXPECT_EQ(e.code, core::Errc::corrupt);
  EXPECT_EQ(e.message, "claimsched.ClaimRequest: ClaimRequest.tasks: empty");

  pb::ClaimRequest msg;
  to_proto(sample_claim(), msg);
  msg.mutable_per_task()->mutable_quantities(0)->set_value(-5);
  e = from_caf_error(receive_fake(msg.SerializeAsString()), &sys_);
  EXPECT_EQ(e.message, "claimsched.ClaimRequest: ClaimRequest.per_task.cpu: negative quantity -5");
}

TEST_F(CafGarbage, EmptyPayloadIsAnError) {
  auto err = receive_fake("");
  ASSERT_TRUE(err);
  EXPECT_EQ(err.category(), kErrorCategory);
}

TEST_F(CafGarbage, RandomPayloadsNeverCrash) {
  std::mt19937_64 rng{7};
  int rejected = 0;
  for (int i = 0; i < 500; ++i) {
    std::string bytes(rng() % 40, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    if (auto err = receive_fake(bytes)) {
      EXPECT_EQ(err.category(), kErrorCategory) << sys_.render(err);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 450);
}

TEST_F(CafGarbage, TruncatedBuffersNeverYieldAValue) {
  // Across processes CAF's length prefix of each payload catches truncation
  // before our decoder could mistake a prefix for a shorter valid message.
  auto buf = serialize(sys_, caf::make_message(sample_claim(), sample_report()));
  for (size_t n = 0; n < buf.size(); ++n) {
    std::vector<char> prefix(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    caf::message loaded;
    EXPECT_TRUE(load_message(sys_, prefix, loaded)) << "prefix of " << n << " bytes loaded";
    caf::message out;
    if (!deserialize(sys_, prefix, out)) {
      EXPECT_TRUE(out.empty()) << "prefix of " << n << " bytes gave " << caf::to_string(out);
    }
  }
}

// -- errors as values ---------------------------------------------------------

TEST(CafErrors, EveryCodeRoundTrips) {
  for (auto code : {core::Errc::parse_error, core::Errc::invalid_argument, core::Errc::unknown_name,
                    core::Errc::duplicate, core::Errc::wrong_state, core::Errc::capacity_exceeded,
                    core::Errc::io_error, core::Errc::corrupt}) {
    core::Error in{code, "something about " + std::string(core::to_string(code))};
    auto err = to_caf_error(in);
    EXPECT_EQ(err.category(), kErrorCategory);
    EXPECT_EQ(err.code(), static_cast<uint8_t>(code));
    auto out = from_caf_error(err);
    EXPECT_EQ(out.code, in.code);
    EXPECT_EQ(out.message, in.message);
  }
}

TEST(CafErrors, CrossesTheSerializerAndRenders) {
  Config cfg;
  caf::actor_system sys{cfg};
  auto err =
      to_caf_error(core::make_error(core::Errc::unknown_name, "pool 'gpu' is not configured"));
  auto buf = serialize(sys, caf::make_message(err));
  caf::message out;
  ASSERT_FALSE(deserialize(sys, buf, out));
  ASSERT_TRUE(out.match_elements<caf::error>());
  auto back = from_caf_error(out.get_as<caf::error>(0), &sys);
  EXPECT_EQ(back.code, core::Errc::unknown_name);
  EXPECT_EQ(back.message, "pool 'gpu' is not configured");
  EXPECT_EQ(sys.render(err), "claimsched: unknown name: pool 'gpu' is not configured");
}

TEST(CafErrors, ForeignAndMalformedErrors) {
  Config cfg;
  caf::actor_system sys{cfg};
  auto timeout = from_caf_error(caf::make_error(caf::sec::request_timeout), &sys);
  EXPECT_EQ(timeout.code, core::Errc::io_error);
  EXPECT_THAT(timeout.message, HasSubstr("request_timeout"));
  // Without a system CAF's own to_string is used.
  EXPECT_THAT(from_caf_error(caf::make_error(caf::sec::request_timeout)).message,
              HasSubstr("request_timeout"));

  auto unknown = from_caf_error(caf::error{200, kErrorCategory, caf::make_message("x")});
  EXPECT_EQ(unknown.code, core::Errc::corrupt);
  EXPECT_EQ(unknown.message, "unknown claimsched error code 200: x");

  auto odd_context = from_caf_error(caf::error{1, kErrorCategory, caf::make_message(1, 2)});
  EXPECT_EQ(odd_context.code, core::Errc::parse_error);
  EXPECT_FALSE(odd_context.message.empty());

  auto none = from_caf_error(caf::error{});
  EXPECT_EQ(none.code, core::Errc::io_error);
}

// -- (d) across a loopback connection between two actor systems ---------------

/// Sends exit to an actor when the test leaves its scope (even through a
/// failed ASSERT): an actor system's destructor waits for all its actors.
struct ExitOnScopeEnd {
  caf::actor actor;
  ~ExitOnScopeEnd() { caf::anon_send_exit(actor, caf::exit_reason::user_shutdown); }
};

/// What the remote node actor saw.
struct NodeProbe {
  std::mutex mutex;
  std::vector<core::ClaimRequest> received;
};

/// A node stand-in: records each claim and answers with a ClaimReply. (Spawned
/// with an argument on purpose: CAF 0.17.6 dereferences a null
/// shared_ptr<tuple<>> when a function actor is spawned without one, which
/// UBSan reports; see the report of the messages work.)
caf::behavior probe_node(caf::event_based_actor* self, NodeProbe* probe) {
  self->set_default_handler(reject_unexpected);
  return {
      [probe](const core::ClaimRequest& claim) {
        {
          std::lock_guard<std::mutex> guard{probe->mutex};
          probe->received.push_back(claim);
        }
        core::ClaimReply reply = sample_claim_reply();
        reply.claim_id = claim.claim_id;
        reply.snapshot.node = claim.node;
        return reply;
      },
  };
}

/// What the one-way sender received back.
struct SenderProbe {
  std::mutex mutex;
  std::vector<std::string> seen;
  void add(std::string what) {
    std::lock_guard<std::mutex> guard{mutex};
    seen.push_back(std::move(what));
  }
};

/// Sends `bytes` as a ClaimRequest, one way, and records whatever comes back.
caf::behavior one_way_sender(caf::event_based_actor* self, caf::actor node, std::string bytes,
                             SenderProbe* probe) {
  self->set_default_handler(
      [probe](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
        probe->add("unexpected " + caf::to_string(x.copy_content_to_message()));
        return caf::make_error(caf::sec::unexpected_message);
      });
  self->send(node, FakeClaimRequest{std::move(bytes)});
  return {
      [probe](const caf::error& e) { probe->add("error " + caf::to_string(e)); },
      [probe](const core::ClaimReply&) { probe->add("a ClaimReply"); },
  };
}

TEST(CafRemote, ClaimRequestCrossesLoopbackIntact) {
  NodeProbe probe;  // both probes outlive both actor systems
  SenderProbe sender_probe;
  Config server_cfg{true};
  caf::actor_system server{server_cfg};
  set_decode_failure_hook(&HookLog::hook);
  HookLog::take();
  auto node = server.spawn(probe_node, &probe);
  ExitOnScopeEnd stop_node{node};
  auto port = server.middleman().publish(node, 0, "127.0.0.1");
  ASSERT_TRUE(port) << server.render(port.error());
  ASSERT_NE(*port, 0);

  // The client also registers the fake ClaimRequest, to play a broken peer.
  Config client_cfg{true, true};
  caf::actor_system client{client_cfg};
  auto remote = client.middleman().remote_actor("127.0.0.1", *port);
  ASSERT_TRUE(remote) << client.render(remote.error());

  caf::scoped_actor self{client};
  auto ask = [&](auto request, caf::timespan timeout) {
    std::optional<core::ClaimReply> reply;
    caf::error error;
    self->request(*remote, timeout, std::move(request))
        .receive([&](const core::ClaimReply& r) { reply = r; },
                 [&](caf::error& e) { error = std::move(e); });
    return std::make_pair(reply, error);
  };

  // 1. A valid claim arrives intact and its reply comes back intact.
  const auto claim = sample_claim();
  auto [reply, error] = ask(claim, caf::timespan{5s});
  ASSERT_FALSE(error) << client.render(error);
  ASSERT_TRUE(reply.has_value());
  auto expected = sample_claim_reply();
  expected.snapshot.node = claim.node;
  expected.claim_id = claim.claim_id;
  EXPECT_EQ(*reply, expected);

  // 2. A claim whose payload does not decode arrives EMPTY (CAF 0.17.6, see
  //    caf_types.hpp); reject_unexpected answers it with Errc::corrupt, and
  //    the hook in the receiving process saw the reason.
  auto bad = claim;
  bad.tasks.clear();
  auto [no_reply, rejected] = ask(FakeClaimRequest{encode(bad)}, caf::timespan{5s});
  EXPECT_FALSE(no_reply.has_value());
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected.category(), kErrorCategory) << client.render(rejected);
  EXPECT_EQ(from_caf_error(rejected).code, core::Errc::corrupt);
  EXPECT_EQ(
      HookLog::take(),
      std::vector<std::string>{"corrupt data: claimsched.ClaimRequest: ClaimRequest.tasks: empty"});

  // Anything else unexpected is sec::unexpected_message, as with CAF's default.
  auto [no_reply2, unexpected] = ask(std::string{"hello"}, caf::timespan{5s});
  EXPECT_FALSE(no_reply2.has_value());
  EXPECT_EQ(unexpected, caf::sec::unexpected_message) << client.render(unexpected);

  // 2b. The same claim as a one-way message from an event-based actor (how
  //     the claim protocol runs): the node's error answer is a response
  //     nobody awaits, which CAF drops at the sender. The sender sees
  //     nothing; only the receiving process's hook knows.
  auto sender = client.spawn(one_way_sender, *remote, encode(bad), &sender_probe);
  std::vector<std::string> hooked;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (hooked.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    hooked = HookLog::take();
  }
  std::this_thread::sleep_for(200ms);  // time for an answer to come back, if one did
  caf::anon_send_exit(sender, caf::exit_reason::user_shutdown);
  EXPECT_EQ(hooked, std::vector<std::string>{
                        "corrupt data: claimsched.ClaimRequest: ClaimRequest.tasks: empty"});
  {
    std::lock_guard<std::mutex> guard{sender_probe.mutex};
    EXPECT_TRUE(sender_probe.seen.empty()) << sender_probe.seen.front();
  }

  // 3. The connection survives the bad message: the next claim arrives.
  auto second = claim;
  second.claim_id = core::ClaimId{claim.claim_id.value + 1};
  second.expected_generation.reset();
  auto [reply2, error2] = ask(second, caf::timespan{5s});
  ASSERT_FALSE(error2) << client.render(error2);
  ASSERT_TRUE(reply2.has_value());
  EXPECT_EQ(reply2->claim_id, second.claim_id);

  set_decode_failure_hook(nullptr);
  std::lock_guard<std::mutex> guard{probe.mutex};
  ASSERT_EQ(probe.received.size(), 2u);
  EXPECT_EQ(probe.received[0], claim);
  EXPECT_EQ(probe.received[1], second);
}

}  // namespace
}  // namespace claimsched::messages
