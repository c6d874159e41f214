// Bad input at every door, on purpose (issue 19, item 5): a scripted hostile
// client against a real server on 127.0.0.1. Over raw TCP it sends bytes
// that are not CAF's protocol, truncated and malformed BASP frames, a frame
// that announces a large payload and never sends it, and a flood of
// connections; over CAF it sends requests of the wrong type and jobs past
// every limit (10^9 tasks, too many constraints, too much text), registers a
// node under a live node's name, and guesses tokens. Each gets an error or a
// dropped connection; meanwhile a well-behaved client submits and completes
// jobs, no acknowledged job is lost, and the server's memory comes back.
//
// Not covered, because CAF 0.17.6's BASP layer (below our code) allows it
// and only [tls] (issue 19, item 1) keeps strangers away from it: a header
// may announce a payload of up to 4 GiB, which the server allocates and
// zero-fills before reading a byte of it (a 32-byte header announcing
// 256 MiB raised a Release server's RSS from 32 to 294 MB until the
// connection was dropped); a connection that never completes its handshake
// is not timed out (idle 8 s, still open); a routed_message is forwarded to
// any node the server is connected to, agents included (basp/instance.cpp), so claims with forged epochs could reach
// an agent's node actor without passing the gateway.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <memory>

#include "actors/connect.hpp"
#include "actors/registration.hpp"
#include "messages/caf_types.hpp"
#include "messages/errors.hpp"
#include "tests/integration/cluster.hpp"

namespace claimsched::testing {
namespace {

using namespace std::chrono_literals;

// -- raw TCP ------------------------------------------------------------------

uint16_t port_of(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

/// A connected socket to 127.0.0.1:port (-1 on failure).
int connect_raw(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

/// Whether the peer closes the connection within `timeout` (whatever it
/// sends first, e.g. its handshake, is read and dropped).
bool closed_by_peer(int fd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;  // 0: closed; < 0: reset
  }
}

/// A BASP header as CAF 0.17 writes it (caf/io/basp/header.hpp): operation,
/// two padding bytes, flags, payload length, operation data, source and
/// destination actor, integers in network byte order; 32 bytes.
std::string basp_header(uint8_t operation, uint32_t payload_len, uint64_t source, uint64_t dest) {
  std::string h;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) h.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(operation, 1);
  put(0, 2);
  put(0, 1);
  put(payload_len, 4);
  put(0, 8);
  put(source, 8);
  put(dest, 8);
  return h;
}
constexpr uint8_t kDirectMessage = 0x02;

/// Resident memory of a process in KiB (/proc/PID/status), -1 if unknown.
long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

/// A process's soft and hard limits on open files (/proc/PID/limits).
std::pair<uint64_t, uint64_t> open_file_limits(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::stringstream words(line.substr(14));
    std::string soft, hard;
    words >> soft >> hard;
    auto value = [](const std::string& w) { return w == "unlimited" ? UINT64_MAX : std::stoull(w); };
    return {value(soft), value(hard)};
  }
  return {0, 0};
}

// -- CAF ----------------------------------------------------------------------

/// An in-process CAF client of the server's gateway, sending what the real
/// client never would.
class CafClient {
 public:
  explicit CafClient(const std::string& address) : sys_(config()), self_(sys_) {
    auto remote = actors::connect_gateway(sys_, "127.0.0.1", port_of(address), std::chrono::seconds(10));
    if (remote) gateway_ = *remote;
  }
  ~CafClient() {
    gateway_ = nullptr;
    for (auto& d : dummies_) self_->send_exit(d, caf::exit_reason::user_shutdown);
    self_->wait_for(dummies_);
    actors::stop_network_helpers(sys_, *self_);
  }

  /// An actor that answers nothing, passed off as a node's.
  actors::node_actor fake_node() {
    dummies_.push_back(sys_.spawn([]() -> caf::behavior { return {[](int) {}}; }));
    return caf::actor_cast<actors::node_actor>(dummies_.back());
  }

  /// Partition `id`'s scheduler as the gateway names it to HA peers (null
  /// if it does not).
  actors::scheduler_actor scheduler_of(uint32_t id) {
    actors::scheduler_actor out;
    self_->request(gateway_, std::chrono::seconds(10), actors::partition_atom::value, id)
        .receive([&](actors::scheduler_actor& s, actors::change_feed_actor&, uint64_t) { out = std::move(s); },
                 [&](caf::error&) {});
    return out;
  }

  /// An actor that counts the job events (watch_atom) it is told of.
  caf::actor spy(std::shared_ptr<std::atomic<int>> heard) {
    dummies_.push_back(sys_.spawn([heard]() -> caf::behavior {
      return {[heard](actors::watch_atom, const std::vector<core::JobId>&, const std::vector<core::JobView>&) {
        ++*heard;
      }};
    }));
    return dummies_.back();
  }

  bool connected() const { return gateway_ != nullptr; }
  caf::actor gateway() const { return caf::actor_cast<caf::actor>(gateway_); }

  /// Sends `xs...` to `to` as a request: the answer rendered, or the error
  /// (Errc and message) it got.
  template <class... Ts>
  std::variant<caf::message, core::Error> ask(const caf::actor& to, Ts&&... xs) {
    std::variant<caf::message, core::Error> out = core::make_error(core::Errc::unavailable, "no answer");
    self_->request(to, std::chrono::seconds(10), std::forward<Ts>(xs)...)
        .receive([&](caf::message& m) { out = std::move(m); },
                 [&](caf::error& err) {
                   // A value the handler above does not take (CAF 0.17's
                   // blocking receive matches types): an answer, not a refusal.
                   if (err == caf::sec::unexpected_response)
                     out = caf::make_message(sys_.render(err));
                   else if (err.category() == messages::kErrorCategory)
                     out = messages::from_caf_error(err, &sys_);
                   else
                     out = core::make_error(core::Errc::invalid_argument, sys_.render(err));
                 });
    return out;
  }
  template <class... Ts>
  std::variant<caf::message, core::Error> ask_gateway(Ts&&... xs) {
    return ask(gateway(), std::forward<Ts>(xs)...);
  }

 private:
  static caf::actor_system_config& config() {
    static caf::actor_system_config cfg = [] {
      caf::actor_system_config c;
      actors::LinkOptions link;
      link.threads = 2;
      link.shared_queue = true;
      actors::configure(c, link);
      return c;
    }();
    return cfg;
  }

  caf::actor_system sys_;
  caf::scoped_actor self_;
  actors::gateway_actor gateway_;
  std::vector<caf::actor> dummies_;
};

/// The error an answer carries ("" and the value rendered if none).
core::Error error_of(const std::variant<caf::message, core::Error>& answer) {
  if (const auto* e = std::get_if<core::Error>(&answer)) return *e;
  return core::Error{core::Errc::invalid_argument,
                     "no error: answered " + caf::to_string(std::get<caf::message>(answer))};
}
bool refused(const std::variant<caf::message, core::Error>& answer) {
  return std::holds_alternative<core::Error>(answer);
}

core::JobSpec small_job() {
  core::JobSpec job;
  job.name = "hostile";
  job.user = "mallory";
  job.pool = "default";
  job.per_task = *core::Resources::parse("cpu=1");
  job.command = {"/bin/true"};
  return job;
}

// -- the tests ----------------------------------------------------------------

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
    cluster.start_agent("n1", "cpu=4,memory=4Gi");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
    // A job acknowledged before the attack, checked after it.
    before = cluster.submit("--resources cpu=1", "/bin/true");
    ASSERT_NE(before, 0u);
    ASSERT_EQ(cluster.wait_for_job(before).value("state", ""), "succeeded");
  }

  /// The well-behaved client: a job submitted and completed.
  void a_job_runs(const char* when) {
    std::string why;
    auto id = cluster.submit("--resources cpu=1", "/bin/true", &why);
    ASSERT_NE(id, 0u) << when << ": " << why;
    EXPECT_EQ(cluster.wait_for_job(id).value("state", ""), "succeeded") << when;
  }

  /// The server is up and still knows the job acknowledged before.
  void still_serving() {
    ASSERT_TRUE(cluster.server().running()) << LocalCluster::read_file(cluster.server_log());
    auto s = cluster.status(before);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->value("state", ""), "succeeded");
    a_job_runs("after the attack");
  }

  LocalCluster cluster;
  uint64_t before = 0;
};

TEST_F(HostileTest, RawFramesAndAConnectionFloodAreDroppedWhileOthersAreServed) {
  uint16_t port = port_of(cluster.address());
  pid_t server = cluster.server().pid();
  long rss_before = rss_kib(server);
  ASSERT_GT(rss_before, 0);

  // Not CAF at all: an HTTP request. Its first byte is no BASP operation.
  int fd = connect_raw(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET / HTTP/1.1\r\nHost: claimsched\r\nUser-Agent: hostile\r\n\r\n"));
  EXPECT_TRUE(closed_by_peer(fd, 10s)) << "an HTTP request";
  ::close(fd);

  // A header with an unknown operation, and one whose fields contradict it
  // (a message to actor 0).
  for (const auto& frame : {basp_header(0x7f, 0, 0, 0), basp_header(kDirectMessage, 16, 1, 0) + std::string(16, 'x')}) {
    fd = connect_raw(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, frame));
    EXPECT_TRUE(closed_by_peer(fd, 10s)) << "a malformed header";
    ::close(fd);
  }

  // A well-formed header before any handshake, its payload garbage.
  fd = connect_raw(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, basp_header(kDirectMessage, 64, 1, 1) + std::string(64, '\xff')));
  EXPECT_TRUE(closed_by_peer(fd, 10s)) << "a message before the handshake";
  ::close(fd);

  // Truncated frames: half a header, and a header announcing 1 MiB that
  // sends 100 bytes of it, each then closed by the client.
  for (const auto& frame : {basp_header(kDirectMessage, 64, 1, 1).substr(0, 10),
                            basp_header(kDirectMessage, 1 << 20, 1, 1) + std::string(100, 'x')}) {
    fd = connect_raw(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, frame));
    ::close(fd);
  }

  // The flood: the server raised its limit on open files (a descriptor per
  // connection) as far as allowed, up to 65536.
  auto [soft, hard] = open_file_limits(server);
  EXPECT_EQ(soft, std::min<uint64_t>(hard, 65536));
  // 400 connections, each holding half a header, open while the
  // well-behaved client works.
  std::vector<int> flood;
  for (int i = 0; i < 400; ++i) {
    int c = connect_raw(port);
    ASSERT_GE(c, 0) << "connection " << i;
    flood.push_back(c);
    send_all(c, basp_header(kDirectMessage, 64, 1, 1).substr(0, 7));
  }
  a_job_runs("during the flood");
  for (int c : flood) ::close(c);

  ASSERT_NO_FATAL_FAILURE(still_serving());
  // Memory: what the attack cost is given back (generous: the ASan build's
  // allocator keeps freed memory in quarantine).
  long rss_after = rss_kib(server);
  EXPECT_LT(rss_after, rss_before + 128 * 1024) << "RSS before " << rss_before << " KiB, after " << rss_after << " KiB";
  std::cout << "server RSS before the attack " << rss_before << " KiB, after " << rss_after << " KiB\n";
}

TEST_F(HostileTest, CafRequestsOfTheWrongTypeOrPastALimitGetErrors) {
  CafClient hostile(cluster.address());
  ASSERT_TRUE(hostile.connected());

  // 10^9 tasks: refused by the server (the real client refuses before sending).
  auto job = small_job();
  job.count = 1'000'000'000;
  auto answer = hostile.ask_gateway(job);
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::invalid_argument);
  EXPECT_NE(error_of(answer).message.find("count"), std::string::npos) << error_of(answer).message;

  // Four billion copies of a job in one message: refused before any is
  // queued (kMaxJobsPerSubmit); no copy runs.
  answer = hostile.ask_gateway(actors::repeat_atom::value, small_job(), uint32_t{4'000'000'000});
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::invalid_argument) << error_of(answer).message;

  // A list past its limit: 2000 constraints (kMaxLabels 1024) do not decode;
  // the server answers that the payload did not decode.
  job = small_job();
  job.constraints.assign(2000, "x=y");
  answer = hostile.ask_gateway(job);
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::corrupt) << error_of(answer).message;

  // Too much text (kMaxJobTextBytes, 2 MiB): one 3 MiB argument.
  job = small_job();
  job.command.push_back(std::string(3 << 20, 'a'));
  answer = hostile.ask_gateway(job);
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::invalid_argument) << error_of(answer).message;

  // Wrong types: a bare string, an atom with the wrong argument, a node
  // registration without a node actor.
  EXPECT_TRUE(refused(hostile.ask_gateway(std::string("hello"))));
  EXPECT_TRUE(refused(hostile.ask_gateway(actors::status_atom::value, std::string("1"))));
  EXPECT_TRUE(refused(hostile.ask_gateway(actors::cancel_atom::value, core::JobId{before}, 7)));
  core::NodeSpec spec;
  spec.id = core::NodeId{424242};
  spec.name = "mallory";
  spec.pool = "default";
  spec.capacity = *core::Resources::parse("cpu=1");
  answer = hostile.ask_gateway(actors::register_atom::value, spec, actors::node_actor{});
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::invalid_argument) << error_of(answer).message;

  // A node registering under a live node's name: with another id, and with
  // its id (agents derive the id from the name: FNV-1a, apps/agent_main.cpp).
  spec.name = "n1";
  answer = hostile.ask_gateway(actors::register_atom::value, spec, hostile.fake_node());
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::duplicate) << error_of(answer).message;
  uint32_t h = 2166136261u;
  for (unsigned char c : std::string("n1")) h = (h ^ c) * 16777619u;
  spec.id = core::NodeId{h};
  answer = hostile.ask_gateway(actors::register_atom::value, spec, hostile.fake_node());
  ASSERT_TRUE(refused(answer));
  EXPECT_EQ(error_of(answer).code, core::Errc::duplicate) << error_of(answer).message;
  EXPECT_EQ(cluster.alive_nodes(), 1);

  // A scheduler's job events are local only: a stranger that got its handle
  // (without [auth] the gateway answers HA peers' partition question to
  // anyone) and asks for them hears of no job (the one run below).
  auto scheduler = hostile.scheduler_of(1);
  ASSERT_TRUE(scheduler) << "the gateway named no scheduler for partition 1";
  auto heard = std::make_shared<std::atomic<int>>(0);
  auto spy = hostile.spy(heard);
  caf::anon_send(scheduler, actors::watch_atom::value, spy);

  // The well-behaved client, while the hostile one is still connected.
  a_job_runs("with the hostile client connected");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(heard->load(), 0) << "a remote actor was told of job events";
  ASSERT_NO_FATAL_FAILURE(still_serving());
}

TEST_F(HostileTest, ASecondAgentWithALiveNodesNameIsRefused) {
  std::vector<std::string> argv{CLAIMSCHED_BINARY, "--log-level",      "debug",       "agent",
                                "--server",        cluster.address(),  "--name",      "n1",
                                "--resources",     "cpu=2,memory=1Gi", "--state-dir", cluster.dir() + "/n1-twin"};
  BackgroundProcess twin(argv, cluster.dir() + "/n1-twin.log");
  ASSERT_TRUE(twin.started());
  ASSERT_TRUE(LocalCluster::wait_until(
      [&] {
        return LocalCluster::read_file(cluster.server_log()).find("refusing a second node named n1") !=
               std::string::npos;
      },
      20s))
      << LocalCluster::read_file(cluster.dir() + "/n1-twin.log");
  // The first agent keeps its node: one node, its capacity, jobs run on it.
  EXPECT_EQ(cluster.alive_nodes(), 1);
  auto nodes = nlohmann::json::parse(cluster.client("nodes --json").out, nullptr, false);
  ASSERT_TRUE(nodes.is_array() && nodes.size() == 1u) << nodes.dump();
  a_job_runs("with a twin agent knocking");
  twin.kill();
  twin.wait();
  ASSERT_NO_FATAL_FAILURE(still_serving());
}

// -- logins ([auth]) ----------------------------------------------------------

constexpr const char* kAlice = "alice-0123456789abcdef";

class HostileLoginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(cluster.dir() + "/tokens") << kAlice << " alice\n";
    std::ofstream(cluster.dir() + "/alice.token") << kAlice << "\n";
    ::setenv("CLAIMSCHED_TOKEN", kAlice, 1);
    ASSERT_NO_FATAL_FAILURE(cluster.start_server());
    cluster.start_agent("n1", "cpu=4,memory=4Gi");
    ASSERT_TRUE(cluster.wait_for_alive_nodes(1));
  }
  void TearDown() override { ::unsetenv("CLAIMSCHED_TOKEN"); }

  size_t audit_lines_with(const std::string& text) const {
    std::stringstream lines(LocalCluster::read_file(cluster.dir() + "/audit.log"));
    size_t n = 0;
    for (std::string line; std::getline(lines, line);) n += line.find(text) != std::string::npos;
    return n;
  }

  LocalCluster cluster{"[auth]\ntokens_file = \"tokens\"\naudit_log = \"audit.log\"\n"};
};

TEST_F(HostileLoginTest, GuessedTokensArePausedPerClientAndSessionsAreCapped) {
  // One process's CAF clients are one client to the server (CAF 0.17's node
  // id is the host's and the process's): the sessions first, then the guesses.
  {
    // Sessions: 64 per client; more are refused, and the others still served.
    CafClient hoarder(cluster.address());
    ASSERT_TRUE(hoarder.connected());
    for (int i = 0; i < 64; ++i) {
      auto answer = hoarder.ask_gateway(actors::login_atom::value, std::string(kAlice));
      ASSERT_FALSE(refused(answer)) << i << ": " << error_of(answer).message;
    }
    auto answer = hoarder.ask_gateway(actors::login_atom::value, std::string(kAlice));
    ASSERT_TRUE(refused(answer));
    EXPECT_EQ(error_of(answer).code, core::Errc::capacity_exceeded) << error_of(answer).message;
    auto id = cluster.submit("--resources cpu=1", "/bin/true");
    ASSERT_NE(id, 0u);
    EXPECT_EQ(cluster.wait_for_job(id).value("state", ""), "succeeded");
  }
  // The hoarder's sessions end with its connection.
  EXPECT_TRUE(LocalCluster::wait_until(
      [&] {
        std::stringstream log(LocalCluster::read_file(cluster.server_log()));
        size_t ended = 0;
        for (std::string line; std::getline(log, line);)
          ended += line.find("ended with its client's connection") != std::string::npos;
        return ended >= 64;
      },
      10s));

  {
    CafClient guesser(cluster.address());
    ASSERT_TRUE(guesser.connected());
    // AuthDoorConfig: 20 failed logins per client per 10 s.
    for (int i = 0; i < 20; ++i) {
      auto answer = guesser.ask_gateway(actors::login_atom::value, "guess-" + std::to_string(i));
      ASSERT_TRUE(refused(answer));
      EXPECT_EQ(error_of(answer).code, core::Errc::unauthenticated) << i << ": " << error_of(answer).message;
    }
    // Paused: even the right token is not looked at now.
    auto answer = guesser.ask_gateway(actors::login_atom::value, std::string(kAlice));
    ASSERT_TRUE(refused(answer));
    EXPECT_EQ(error_of(answer).code, core::Errc::unavailable) << error_of(answer).message;
    EXPECT_NE(error_of(answer).message.find("failed logins"), std::string::npos) << error_of(answer).message;
    // Others are not paused: the well-behaved client logs in and works.
    auto id = cluster.submit("--resources cpu=1", "/bin/true");
    ASSERT_NE(id, 0u);
    EXPECT_EQ(cluster.wait_for_job(id).value("state", ""), "succeeded");
  }
  EXPECT_GE(audit_lines_with("\"login\""), 21u);

  EXPECT_TRUE(cluster.server().running());
}

TEST(GatewayOfAnotherBuild, AClientIsToldItsServerSpeaksAnotherBuildsMessages) {
  // A server whose gateway takes other messages (another build): published
  // here, in this process, as an actor of another interface.
  caf::actor_system_config cfg;
  actors::configure(cfg);
  caf::actor_system sys{cfg};
  using other_gateway = caf::typed_actor<caf::reacts_to<actors::tick_atom, uint64_t>>;
  auto other = sys.spawn([]() -> other_gateway::behavior_type { return {[](actors::tick_atom, uint64_t) {}}; });
  auto port = sys.middleman().publish(other, 0, "127.0.0.1", true);
  ASSERT_TRUE(port) << sys.render(port.error());
  auto gateway = actors::connect_gateway(sys, "127.0.0.1", *port, std::chrono::seconds(10));
  ASSERT_FALSE(gateway);
  auto why = messages::from_caf_error(gateway.error(), &sys).message;
  EXPECT_NE(why.find("127.0.0.1:" + std::to_string(*port) + " runs a claimsched of another build"), std::string::npos)
      << why;
  caf::anon_send_exit(other, caf::exit_reason::user_shutdown);
  caf::scoped_actor self{sys};
  actors::stop_network_helpers(sys, *self);
}

}  // namespace
}  // namespace claimsched::testing
