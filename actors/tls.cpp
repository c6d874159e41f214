#include "actors/tls.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <caf/detail/socket_guard.hpp>
#include <caf/io/doorman.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>

namespace claimsched::actors {

namespace {

using caf::io::network::native_socket;
using caf::io::network::rw_state;
using default_mpx = caf::io::network::default_multiplexer;

std::string ssl_errors() {
  std::string msg;
  while (auto err = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof buf);
    if (!msg.empty()) msg += "; ";
    msg += buf;
  }
  return msg;
}

std::string subject_field(X509* cert, int nid) {
  X509_NAME* name = X509_get_subject_name(cert);
  int at = name ? X509_NAME_get_index_by_NID(name, nid, -1) : -1;
  if (at < 0) return {};
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  unsigned char* utf8 = nullptr;
  int len = ASN1_STRING_to_UTF8(&utf8, data);
  if (len < 0) return {};
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(len));
  OPENSSL_free(utf8);
  return out;
}

/// The role and name a certificate gives its holder; an error if it names
/// no role.
core::Expected<PeerIdentity> identity_of(X509* cert) {
  auto ou = subject_field(cert, NID_organizationalUnitName);
  auto role = parse_peer_role(ou);
  auto cn = subject_field(cert, NID_commonName);
  if (!role)
    return core::make_error(
        core::Errc::invalid_argument,
        "certificate '" + cn + "' names no role (its subject's OU is '" + ou + "', not server, agent or client)");
  return PeerIdentity{*role, cn};
}

/// What one connection's handshake found, shared between the session (the
/// multiplexer's thread) and whoever opened the connection.
struct Outcome {
  std::mutex mutex;
  std::string problem;
  /// The problem is our verify callback's verdict on the peer's certificate
  /// (else: OpenSSL's error, or the peer's alert).
  bool refused_by_us = false;
  std::optional<PeerIdentity> peer;
};

/// The process's TLS setup: one SSL_CTX, loaded once (CAF's module loads
/// the files again for every connection).
struct TlsContext {
  SSL_CTX* ctx = nullptr;
  PeerIdentity own;
  int outcome_index = -1;
  int expect_index = -1;
  std::mutex peers_mutex;
  std::map<std::string, PeerIdentity> peers;
  /// Servers this process reached, by "host:port".
  std::map<std::string, PeerIdentity> servers;
  std::string cert_pem;
  EVP_PKEY* key = nullptr;
  X509_STORE* ca = nullptr;
};

TlsContext* g_tls = nullptr;

int verify_peer(int preverify_ok, X509_STORE_CTX* store) {
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* outcome = static_cast<Outcome*>(SSL_get_ex_data(ssl, g_tls->outcome_index));
  auto* expect = static_cast<const PeerRole*>(SSL_get_ex_data(ssl, g_tls->expect_index));
  auto fail = [&](std::string why) {
    if (outcome) {
      std::lock_guard<std::mutex> guard(outcome->mutex);
      if (outcome->problem.empty()) outcome->problem = std::move(why);
      outcome->refused_by_us = true;
    }
    return 0;
  };
  X509* cert = X509_STORE_CTX_get_current_cert(store);
  if (!preverify_ok) {
    int err = X509_STORE_CTX_get_error(store);
    std::string cn = cert ? subject_field(cert, NID_commonName) : "";
    return fail("certificate '" + cn + "' is not from the cluster CA (" + X509_verify_cert_error_string(err) + ")");
  }
  if (X509_STORE_CTX_get_error_depth(store) != 0) return 1;  // an issuer in the chain: the CA checked it
  auto id = identity_of(cert);
  if (!id) return fail(id.error().message);
  if (expect && id->role != *expect)
    return fail("the peer presents a certificate of role " + std::string(to_string(id->role)) + " ('" + id->cn +
                "'), not of role " + to_string(*expect));
  if (outcome) {
    std::lock_guard<std::mutex> guard(outcome->mutex);
    outcome->peer = *id;
  }
  return 1;
}

const PeerRole kServer = PeerRole::server;

/// The socket BIO, writing with send(MSG_NOSIGNAL): a peer that went away
/// must not end the process with SIGPIPE. (CAF's session blocks SIGPIPE
/// around every read and write instead: three more system calls each.)
int send_nosignal(BIO* bio, const char* buf, int len) {
  int fd = -1;
  BIO_get_fd(bio, &fd);
  ssize_t n = ::send(fd, buf, static_cast<size_t>(len), MSG_NOSIGNAL);
  BIO_clear_retry_flags(bio);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

BIO_METHOD* socket_method() {
  static BIO_METHOD* method = [] {
    const BIO_METHOD* base = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_TYPE_SOCKET, "claimsched socket");
    BIO_meth_set_write(m, send_nosignal);
    BIO_meth_set_read(m, BIO_meth_get_read(base));
    BIO_meth_set_puts(m, BIO_meth_get_puts(base));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(base));
    BIO_meth_set_create(m, BIO_meth_get_create(base));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(base));
    return m;
  }();
  return method;
}

/// One connection's SSL state; after caf::openssl::session (0.17.6), with our
/// verify callback and a word in the log when a handshake fails.
class Session {
 public:
  Session(std::shared_ptr<Outcome> outcome, bool accepting)
      : outcome_(std::move(outcome)), accepting_side_(accepting) {}
  ~Session() {
    forget_peer();
    if (ssl_) SSL_free(ssl_);
  }

  bool init() {
    ssl_ = SSL_new(g_tls->ctx);
    if (!ssl_) return false;
    SSL_set_ex_data(ssl_, g_tls->outcome_index, outcome_.get());
    // Whoever connects talks to a gateway: only a server may answer.
    if (!accepting_side_) SSL_set_ex_data(ssl_, g_tls->expect_index, const_cast<PeerRole*>(&kServer));
    return true;
  }

  bool start(native_socket fd) {
    fd_ = fd;
    BIO* bio = BIO_new(socket_method());
    if (!bio) return false;
    BIO_set_fd(bio, fd, BIO_NOCLOSE);
    SSL_set_bio(ssl_, bio, bio);
    int ret;
    if (accepting_side_) {
      SSL_set_accept_state(ssl_);
      ret = SSL_accept(ssl_);
      accepting_ = ret != 1;
    } else {
      SSL_set_connect_state(ssl_);
      ret = SSL_connect(ssl_);
      connecting_ = ret != 1;
    }
    if (ret == 1) {
      established();
      return true;
    }
    return handle_result(ret);
  }

  rw_state read_some(size_t& result, void* buf, size_t len) { return do_some(false, result, buf, len); }
  rw_state write_some(size_t& result, const void* buf, size_t len) {
    return do_some(true, result, const_cast<void*>(buf), len);
  }
  bool must_read_more(size_t threshold) { return static_cast<size_t>(SSL_pending(ssl_)) >= threshold; }

 private:
  std::string peer_address() const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
    char host[INET6_ADDRSTRLEN] = {};
    uint16_t port = 0;
    if (addr.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
  }

  void established() {
    if (!accepting_side_) return;
    std::optional<PeerIdentity> peer;
    {
      std::lock_guard<std::mutex> guard(outcome_->mutex);
      peer = outcome_->peer;
    }
    if (!peer) return;
    address_ = peer_address();
    spdlog::info("tls: accepted {} '{}' from {}", to_string(peer->role), peer->cn, address_);
    std::lock_guard<std::mutex> guard(g_tls->peers_mutex);
    g_tls->peers[address_] = *peer;
  }

  void forget_peer() {
    if (address_.empty()) return;
    std::lock_guard<std::mutex> guard(g_tls->peers_mutex);
    g_tls->peers.erase(address_);
  }

  /// A failed handshake or connection: say why, once, on the side that
  /// refused or was refused.
  void failed(const std::string& ssl_error) {
    std::string why;
    bool ours = false;
    {
      std::lock_guard<std::mutex> guard(outcome_->mutex);
      if (outcome_->problem.empty()) outcome_->problem = explain(ssl_error);
      why = outcome_->problem;
      ours = outcome_->refused_by_us;
    }
    if (said_) return;
    said_ = true;
    if (!accepting_side_ || !(accepting_ || address_.empty())) return;
    if (ours)
      spdlog::warn("tls: refused a peer from {}: {}", peer_address(), why);
    else
      spdlog::warn("tls: handshake with a peer from {} failed: {}", peer_address(), why);
  }

  /// OpenSSL's words, with what they usually mean here.
  static std::string explain(const std::string& ssl_error) {
    if (ssl_error.empty()) return "the peer closed the connection during the TLS handshake";
    if (ssl_error.find("wrong version number") != std::string::npos ||
        ssl_error.find("packet length too long") != std::string::npos)
      return ssl_error + " (the peer does not speak TLS: is [tls] configured on both sides?)";
    if (ssl_error.find("peer did not return a certificate") != std::string::npos)
      return ssl_error + " (the peer has no certificate: give it [tls] cert and key)";
    if (ssl_error.find("alert unknown ca") != std::string::npos)
      return ssl_error + " (the peer does not trust this member's CA)";
    if (ssl_error.find("alert certificate required") != std::string::npos ||
        ssl_error.find("alert bad certificate") != std::string::npos ||
        ssl_error.find("alert handshake failure") != std::string::npos)
      return ssl_error + " (the peer refused this member's certificate; its log says why)";
    return ssl_error;
  }

  bool handle_result(int ret) {
    switch (SSL_get_error(ssl_, ret)) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        return true;
      case SSL_ERROR_ZERO_RETURN:
        failed({});
        return false;
      default:
        failed(ssl_errors());
        return false;
    }
  }

  rw_state do_some(bool writing, size_t& result, void* buf, size_t len) {
    result = 0;
    auto pending = [&](int res) -> rw_state {
      switch (SSL_get_error(ssl_, res)) {
        case SSL_ERROR_WANT_READ:
          if (len == 0 && writing) return rw_state::indeterminate;
          return rw_state::success;
        case SSL_ERROR_WANT_WRITE:
          return rw_state::success;
        default:
          failed(ssl_errors());
          return rw_state::failure;
      }
    };
    if (connecting_) {
      auto res = SSL_connect(ssl_);
      if (res != 1) return pending(res);
      connecting_ = false;
      established();
    }
    if (accepting_) {
      auto res = SSL_accept(ssl_);
      if (res != 1) return pending(res);
      accepting_ = false;
      established();
    }
    if (len == 0) return rw_state::indeterminate;
    auto ret = writing ? SSL_write(ssl_, buf, static_cast<int>(len)) : SSL_read(ssl_, buf, static_cast<int>(len));
    if (ret > 0) {
      result = static_cast<size_t>(ret);
      return rw_state::success;
    }
    return handle_result(ret) ? rw_state::success : rw_state::failure;
  }

  std::shared_ptr<Outcome> outcome_;
  bool accepting_side_;
  SSL* ssl_ = nullptr;
  native_socket fd_ = -1;
  bool connecting_ = false;
  bool accepting_ = false;
  bool said_ = false;
  std::string address_;
};

struct SslPolicy {
  explicit SslPolicy(std::unique_ptr<Session> s) : session(std::move(s)) {}
  rw_state read_some(size_t& result, native_socket, void* buf, size_t len) {
    return session->read_some(result, buf, len);
  }
  rw_state write_some(size_t& result, native_socket, const void* buf, size_t len) {
    return session->write_some(result, buf, len);
  }
  bool try_accept(native_socket&, native_socket) { return false; }  // the doorman accepts
  bool must_read_more(native_socket, size_t threshold) { return session->must_read_more(threshold); }
  std::unique_ptr<Session> session;
};

/// caf::openssl's scribe_impl (0.17.6), over our session.
class TlsScribe : public caf::io::scribe {
 public:
  TlsScribe(default_mpx& mpx, native_socket fd, std::unique_ptr<Session> session)
      : scribe(caf::io::network::conn_hdl_from_socket(fd)), stream_(mpx, fd, std::move(session)) {}

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_) launch();
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override { stream_.flush(this); }
  std::string addr() const override {
    auto x = caf::io::network::remote_addr_of_fd(stream_.fd());
    return x ? *x : "";
  }
  uint16_t port() const override {
    auto x = caf::io::network::remote_port_of_fd(stream_.fd());
    return x ? *x : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

 private:
  void launch() {
    launched_ = true;
    stream_.start(this);
    // Drives SSL_connect / SSL_accept on before the first real write.
    stream_.force_empty_write(this);
  }

  bool launched_ = false;
  caf::io::network::stream_impl<SslPolicy> stream_;
};

/// caf::openssl's doorman_impl (0.17.6): an SSL accept per new socket.
class TlsDoorman : public caf::io::network::doorman_impl {
 public:
  TlsDoorman(default_mpx& mpx, native_socket fd) : caf::io::network::doorman_impl(mpx, fd) {}

  bool new_connection() override {
    if (detached()) return false;
    auto& dm = acceptor_.backend();
    auto fd = acceptor_.accepted_socket();
    caf::detail::socket_guard guard{fd};
    caf::io::network::nonblocking(fd, true);
    auto session = std::make_unique<Session>(std::make_shared<Outcome>(), true);
    if (!session->init() || !session->start(fd)) return false;
    auto scribe = caf::make_counted<TlsScribe>(dm, fd, std::move(session));
    guard.release();
    auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&dm, hdl);
  }
};

bool readable(const std::string& path, std::string& why) {
  std::ifstream in(path);
  if (!in) {
    why = "cannot read '" + path + "'";
    return false;
  }
  return true;
}

core::Error tls_error(const std::string& what) {
  return core::make_error(core::Errc::invalid_argument, "[tls] " + what);
}

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};

}  // namespace

const char* to_string(PeerRole role) {
  switch (role) {
    case PeerRole::server:
      return "server";
    case PeerRole::agent:
      return "agent";
    case PeerRole::client:
      return "client";
  }
  return "?";
}

std::optional<PeerRole> parse_peer_role(const std::string& text) {
  if (text == "server") return PeerRole::server;
  if (text == "agent") return PeerRole::agent;
  if (text == "client") return PeerRole::client;
  return std::nullopt;
}

core::Expected<PeerIdentity> check_tls_config(const TlsConfig& config, std::optional<PeerRole> expected) {
  const std::pair<const char*, const std::string*> files[] = {
      {"ca", &config.ca}, {"cert", &config.cert}, {"key", &config.key}};
  for (const auto& [name, path] : files) {
    if (path->empty()) return tls_error(std::string(name) + " is missing: give ca, cert and key, or none of them");
    std::string why;
    if (!readable(*path, why)) return tls_error(std::string(name) + ": " + why);
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (!ctx) return tls_error("cannot create an OpenSSL context: " + ssl_errors());
  struct CtxFree {
    SSL_CTX* c;
    ~CtxFree() { SSL_CTX_free(c); }
  } free_ctx{ctx};
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx, config.ca.c_str(), nullptr) != 1)
    return tls_error("ca: '" + config.ca + "' holds no CA certificate in PEM: " + ssl_errors());
  if (SSL_CTX_use_certificate_chain_file(ctx, config.cert.c_str()) != 1)
    return tls_error("cert: '" + config.cert + "' holds no certificate in PEM: " + ssl_errors());
  EVP_PKEY* pkey = nullptr;
  if (FILE* f = std::fopen(config.key.c_str(), "r")) {
    pkey = PEM_read_PrivateKey(f, nullptr, nullptr, const_cast<char*>(""));
    std::fclose(f);
  }
  if (!pkey)
    return tls_error("key: '" + config.key + "' holds no private key in PEM (or it has a passphrase): " + ssl_errors());
  int used = SSL_CTX_use_PrivateKey(ctx, pkey);
  EVP_PKEY_free(pkey);
  ERR_clear_error();
  if (used != 1 || SSL_CTX_check_private_key(ctx) != 1)
    return tls_error("key: '" + config.key + "' is not the key of the certificate in '" + config.cert + "'");
  X509* cert = SSL_CTX_get0_certificate(ctx);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  X509_STORE_CTX* vctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(vctx, store, cert, nullptr);
  int ok = X509_verify_cert(vctx);
  int err = X509_STORE_CTX_get_error(vctx);
  X509_STORE_CTX_free(vctx);
  if (ok != 1)
    return tls_error("cert: '" + config.cert + "' is not signed by the CA in '" + config.ca + "' (" +
                     X509_verify_cert_error_string(err) + ")");
  auto id = identity_of(cert);
  if (!id) return tls_error("cert: " + id.error().message);
  if (expected && id->role != *expected)
    return tls_error("cert: '" + config.cert + "' is a certificate of role " + to_string(id->role) + " ('" + id->cn +
                     "'); this process needs one of role " + to_string(*expected));
  return *id;
}

core::Status enable_tls(const TlsConfig& config, PeerRole own) {
  auto id = check_tls_config(config, own);
  if (!id) return id.error();
  if (g_tls) return core::Status::ok();
  auto tls = std::make_unique<TlsContext>();
  tls->own = *id;
  tls->ctx = SSL_CTX_new(TLS_method());
  SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
  if (SSL_CTX_load_verify_locations(tls->ctx, config.ca.c_str(), nullptr) != 1 ||
      SSL_CTX_use_certificate_chain_file(tls->ctx, config.cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(tls->ctx, config.key.c_str(), SSL_FILETYPE_PEM) != 1)
    return tls_error("cannot load the files: " + ssl_errors());
  // Both sides must show a certificate from the cluster CA with a role.
  SSL_CTX_set_verify(tls->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_peer);
  SSL_CTX_set_cipher_list(tls->ctx, "HIGH:!aNULL:!MD5");
  tls->outcome_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  tls->expect_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  std::ifstream cert_in(config.cert);
  tls->cert_pem.assign(std::istreambuf_iterator<char>(cert_in), std::istreambuf_iterator<char>());
  tls->key = SSL_CTX_get0_privatekey(tls->ctx);
  tls->ca = SSL_CTX_get_cert_store(tls->ctx);
  g_tls = tls.release();  // lives as long as the process: sessions may outlive any owner
  return core::Status::ok();
}

bool tls_enabled() { return g_tls != nullptr; }

caf::expected<caf::io::scribe_ptr> tls_connect(caf::actor_system& sys, const std::string& host, uint16_t port,
                                               std::function<std::string()>& problem,
                                               std::function<std::optional<PeerIdentity>()>& peer) {
  auto fd = caf::io::network::new_tcp_connection(host, port);
  if (!fd) return std::move(fd.error());
  caf::io::network::nonblocking(*fd, true);
  auto outcome = std::make_shared<Outcome>();
  auto session = std::make_unique<Session>(outcome, false);
  if (!session->init() || !session->start(*fd)) {
    caf::io::network::close_socket(*fd);
    std::lock_guard<std::mutex> guard(outcome->mutex);
    return caf::make_error(caf::sec::cannot_connect_to_node, "TLS: " + outcome->problem);
  }
  // Read back by connect_gateway when the connect fails: what TLS refused.
  problem = [outcome] {
    std::lock_guard<std::mutex> guard(outcome->mutex);
    return outcome->problem;
  };
  peer = [outcome, at = host + ":" + std::to_string(port)] {
    std::optional<PeerIdentity> id;
    {
      std::lock_guard<std::mutex> guard(outcome->mutex);
      id = outcome->peer;
    }
    if (id) {
      std::lock_guard<std::mutex> guard(g_tls->peers_mutex);
      g_tls->servers[at] = *id;
    }
    return id;
  };
  auto& mpx = static_cast<default_mpx&>(sys.middleman().backend());
  return caf::io::scribe_ptr{caf::make_counted<TlsScribe>(mpx, *fd, std::move(session))};
}

caf::expected<caf::io::doorman_ptr> tls_listen(caf::actor_system& sys, uint16_t port, const char* host) {
  auto fd = caf::io::network::new_tcp_acceptor_impl(port, host, true);
  if (!fd) return std::move(fd.error());
  auto& mpx = static_cast<default_mpx&>(sys.middleman().backend());
  return caf::io::doorman_ptr{caf::make_counted<TlsDoorman>(mpx, *fd)};
}

std::map<std::string, PeerIdentity> tls_peer_identities() {
  if (!g_tls) return {};
  std::lock_guard<std::mutex> guard(g_tls->peers_mutex);
  return g_tls->peers;
}

std::string own_certificate_pem() { return g_tls ? g_tls->cert_pem : std::string(); }

std::optional<PeerIdentity> own_identity() {
  if (!g_tls) return std::nullopt;
  return g_tls->own;
}

core::Expected<std::string> sign_with_own_key(const std::string& message) {
  if (!g_tls) return core::make_error(core::Errc::wrong_state, "TLS is off: nothing to sign with");
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  std::string signature;
  size_t len = 0;
  bool ok =
      EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, g_tls->key) == 1 &&
      EVP_DigestSign(md, nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  if (ok) {
    signature.resize(len);
    ok = EVP_DigestSign(md, reinterpret_cast<unsigned char*>(signature.data()), &len,
                        reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
    signature.resize(len);
  }
  EVP_MD_CTX_free(md);
  if (!ok) return core::make_error(core::Errc::io_error, "cannot sign: " + ssl_errors());
  return signature;
}

core::Expected<PeerIdentity> verify_signed(const std::string& cert_pem, const std::string& message,
                                           const std::string& signature, PeerRole role) {
  auto refused = [](std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); };
  if (!g_tls) return core::make_error(core::Errc::wrong_state, "TLS is off: nothing to verify against");
  if (cert_pem.size() > 64 * 1024) return refused("the certificate is larger than 64 KiB");
  BIO* in = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  std::unique_ptr<X509, X509Free> cert{PEM_read_bio_X509(in, nullptr, nullptr, nullptr)};
  BIO_free(in);
  ERR_clear_error();
  if (!cert) return refused("no certificate in PEM");
  X509_STORE_CTX* vctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(vctx, g_tls->ca, cert.get(), nullptr);
  int ok = X509_verify_cert(vctx);
  int err = X509_STORE_CTX_get_error(vctx);
  X509_STORE_CTX_free(vctx);
  std::string cn = subject_field(cert.get(), NID_commonName);
  if (ok != 1)
    return refused("certificate '" + cn + "' is not from the cluster CA (" + X509_verify_cert_error_string(err) + ")");
  auto id = identity_of(cert.get());
  if (!id) return refused(id.error().message);
  if (id->role != role)
    return refused("certificate '" + cn + "' is of role " + to_string(id->role) + ", not " + to_string(role));
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  bool good = EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, X509_get0_pubkey(cert.get())) == 1 &&
              EVP_DigestVerify(md, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                               reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(md);
  ERR_clear_error();
  if (!good) return refused("the signature is not by the key of certificate '" + cn + "'");
  return *id;
}

std::optional<PeerIdentity> server_identity_at(const std::string& host, uint16_t port) {
  if (!g_tls) return std::nullopt;
  std::lock_guard<std::mutex> guard(g_tls->peers_mutex);
  auto it = g_tls->servers.find(host + ":" + std::to_string(port));
  if (it == g_tls->servers.end()) return std::nullopt;
  return it->second;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

}  // namespace claimsched::actors
