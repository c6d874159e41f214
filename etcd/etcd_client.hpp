#pragma once

// A client of etcd's v3 JSON gateway (etcd 3.4, Debian's etcd-server): the
// few calls HA needs - leases (grant, keep-alive, revoke), reads of a key or
// a prefix, and transactions - over HTTP, or HTTPS checked against a CA
// (with a client certificate when etcd asks for one), with cpp-httplib. Keys and
// values are base64 on the wire and plain bytes here.
//
// Endpoints: a call goes to the endpoint that answered last; if it cannot be
// reached or does not answer within the timeout, the next one is tried, until
// every endpoint failed (Errc::unavailable naming each). An answer that is an
// etcd error (an expired lease, say) is not retried elsewhere.
//
// Not thread-safe: one Client per thread (each keeps its own connections).
// Over HTTPS, OpenSSL writes with write(2): a process using it must ignore
// SIGPIPE (the server does: apps/process_stats.hpp, ignore_broken_pipes).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace claimsched::etcd {

/// One key as etcd stores it.
struct KeyValue {
  std::string key;
  std::string value;
  /// The revision that created the key (0: absent), last modified it, and
  /// how often it was modified since it was created.
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  /// The lease the key is attached to (0: none).
  int64_t lease = 0;
};

/// Keys read at one revision of the store.
struct Range {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;
};

/// A transaction's condition on one key.
struct Compare {
  enum class Target : uint8_t { create_revision, mod_revision, version, value };
  enum class Result : uint8_t { equal, not_equal, greater, less };
  std::string key;
  Target target = Target::create_revision;
  Result result = Result::equal;
  int64_t number = 0;
  std::string value;

  /// The key does not exist.
  static Compare absent(std::string key) { return {std::move(key), Target::create_revision, Result::equal, 0, {}}; }
  /// The key exists and was created at `revision` (still the same incarnation).
  static Compare created_at(std::string key, int64_t revision) {
    return {std::move(key), Target::create_revision, Result::equal, revision, {}};
  }
  /// The key was last modified at `revision` (0: it does not exist).
  static Compare modified_at(std::string key, int64_t revision) {
    return {std::move(key), Target::mod_revision, Result::equal, revision, {}};
  }
};

/// One operation of a transaction.
struct Operation {
  enum class Kind : uint8_t { put, erase, get };
  Kind kind = Kind::get;
  std::string key;
  /// get and erase: every key in [key, range_end) (empty: just `key`).
  std::string range_end;
  std::string value;
  int64_t lease = 0;

  static Operation put(std::string key, std::string value, int64_t lease = 0) {
    return {Kind::put, std::move(key), {}, std::move(value), lease};
  }
  static Operation erase(std::string key) { return {Kind::erase, std::move(key), {}, {}, 0}; }
  static Operation get(std::string key) { return {Kind::get, std::move(key), {}, {}, 0}; }
};

struct TxnResult {
  bool succeeded = false;
  /// The store's revision after the transaction.
  int64_t revision = 0;
  /// What each get of the branch that ran returned, in order.
  std::vector<std::vector<KeyValue>> gets;
};

struct Lease {
  int64_t id = 0;
  /// The TTL etcd granted (at least its floor: see dependencies.md).
  std::chrono::seconds ttl{0};
};

/// The end of the range holding every key that starts with `prefix`.
std::string prefix_end(std::string_view prefix);

class Client {
 public:
  struct Options {
    /// "http://host:port" or "https://host:port" each; at least one.
    std::vector<std::string> endpoints;
    /// Per attempt at one endpoint (connect, write and read).
    std::chrono::milliseconds timeout{500};
    /// For "https://host:port" endpoints (PEM paths): the CA etcd's
    /// certificate must chain to, and this client's certificate and key for
    /// an etcd that asks for one (--client-cert-auth; both or neither).
    std::string ca;
    std::string cert;
    std::string key;
  };

  /// Checks the endpoints ("http://host:port" or "https://host:port", the
  /// latter with a CA); connects lazily.
  static core::Expected<Client> make(Options options);
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  core::Expected<Lease> grant(std::chrono::seconds ttl);
  /// Refreshes the lease; returns the TTL it now has (0: it is gone).
  core::Expected<std::chrono::seconds> keep_alive(int64_t lease);
  core::Status revoke(int64_t lease);

  core::Expected<Range> get(const std::string& key);
  /// Every key that starts with `prefix`, in key order.
  core::Expected<Range> get_prefix(const std::string& prefix);
  core::Expected<int64_t> put(const std::string& key, const std::string& value, int64_t lease = 0);
  core::Status erase(const std::string& key);
  core::Expected<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Operation>& success,
                                const std::vector<Operation>& failure = {});

  /// The endpoint that answered last.
  const std::string& endpoint() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace claimsched::etcd
