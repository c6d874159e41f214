#include "etcd/etcd_client.hpp"

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace claimsched::etcd {

using core::Errc;
using core::Expected;
using core::Status;
using nlohmann::json;

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(n >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

Expected<std::string> unbase64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    int v = value(c);
    if (v < 0) return core::make_error(Errc::corrupt, "etcd sent invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

/// etcd's JSON encodes int64 as strings; absent fields are zero.
int64_t number(const json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
      return 0;
    }
  }
  return it->is_number() ? it->get<int64_t>() : 0;
}

Expected<KeyValue> key_value(const json& j) {
  KeyValue kv;
  auto key = unbase64(j.value("key", ""));
  if (!key) return key.error();
  auto value = unbase64(j.value("value", ""));
  if (!value) return value.error();
  kv.key = std::move(*key);
  kv.value = std::move(*value);
  kv.create_revision = number(j, "create_revision");
  kv.mod_revision = number(j, "mod_revision");
  kv.version = number(j, "version");
  kv.lease = number(j, "lease");
  return kv;
}

Expected<std::vector<KeyValue>> key_values(const json& j) {
  std::vector<KeyValue> out;
  auto it = j.find("kvs");
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& e : *it) {
    auto kv = key_value(e);
    if (!kv) return kv.error();
    out.push_back(std::move(*kv));
  }
  return out;
}

json operation(const Operation& op) {
  switch (op.kind) {
    case Operation::Kind::put: {
      json put{{"key", base64(op.key)}, {"value", base64(op.value)}};
      if (op.lease != 0) put["lease"] = std::to_string(op.lease);
      return {{"request_put", put}};
    }
    case Operation::Kind::erase: {
      json del{{"key", base64(op.key)}};
      if (!op.range_end.empty()) del["range_end"] = base64(op.range_end);
      return {{"request_delete_range", del}};
    }
    case Operation::Kind::get: {
      json get{{"key", base64(op.key)}};
      if (!op.range_end.empty()) get["range_end"] = base64(op.range_end);
      return {{"request_range", get}};
    }
  }
  return {};
}

json compare(const Compare& c) {
  static const char* targets[] = {"CREATE", "MOD", "VERSION", "VALUE"};
  static const char* results[] = {"EQUAL", "NOT_EQUAL", "GREATER", "LESS"};
  json j{{"key", base64(c.key)},
         {"target", targets[static_cast<int>(c.target)]},
         {"result", results[static_cast<int>(c.result)]}};
  switch (c.target) {
    case Compare::Target::create_revision: j["create_revision"] = std::to_string(c.number); break;
    case Compare::Target::mod_revision: j["mod_revision"] = std::to_string(c.number); break;
    case Compare::Target::version: j["version"] = std::to_string(c.number); break;
    case Compare::Target::value: j["value"] = base64(c.value); break;
  }
  return j;
}

}  // namespace

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

struct Client::Impl {
  Options options;
  size_t current = 0;
  std::vector<std::unique_ptr<httplib::Client>> connections;

  httplib::Client& connection(size_t i) {
    if (!connections[i]) {
      const std::string& endpoint = options.endpoints[i];
      bool https = endpoint.rfind("https://", 0) == 0;
      auto c = https && !options.cert.empty() ? std::make_unique<httplib::Client>(endpoint, options.cert, options.key)
                                              : std::make_unique<httplib::Client>(endpoint);
      if (https) {
        c->set_ca_cert_path(options.ca.c_str());
        c->enable_server_certificate_verification(true);
      }
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(options.timeout).count();
      c->set_connection_timeout(us / 1'000'000, us % 1'000'000);
      c->set_read_timeout(us / 1'000'000, us % 1'000'000);
      c->set_write_timeout(us / 1'000'000, us % 1'000'000);
      c->set_keep_alive(true);
      connections[i] = std::move(c);
    }
    return *connections[i];
  }

  /// POSTs `body` to `path`, trying each endpoint from the current one; the
  /// parsed answer, or an error that names every endpoint's failure.
  Expected<json> post(const std::string& path, const json& body) {
    std::string text = body.dump();
    std::string failures;
    for (size_t attempt = 0; attempt < options.endpoints.size(); ++attempt) {
      size_t i = (current + attempt) % options.endpoints.size();
      // The body is collected as it arrives: etcd's gateway ends an error
      // answer with a gRPC trailer that cpp-httplib 0.11 cannot parse (it
      // reports a read error), but the JSON before it is all there.
      std::string received;
      httplib::Request req;
      req.method = "POST";
      req.path = path;
      req.body = text;
      req.set_header("Content-Type", "application/json");
      req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        received.append(data, n);
        return true;
      };
      httplib::Response res;
      httplib::Error error = httplib::Error::Success;
      bool ok = connection(i).send(req, res, error);
      if (!ok) connections[i].reset();  // a fresh connection next time
      if (received.empty() && (!ok || res.status >= 500)) {
        failures += (failures.empty() ? "" : "; ") + options.endpoints[i] + ": " +
                    (ok ? "HTTP " + std::to_string(res.status) : httplib::to_string(error));
        continue;
      }
      current = i;
      // The gateway may follow an error's JSON with a gRPC trailer line:
      // read the first JSON value and ignore what comes after it.
      json parsed;
      try {
        std::istringstream body_stream(received);
        body_stream >> parsed;
      } catch (const json::exception&) {
        parsed = json();
      }
      if (!parsed.is_object())
        return core::make_error(Errc::corrupt, "etcd at " + options.endpoints[i] + " answered " + path +
                                                   " with something that is not JSON: " + received.substr(0, 200));
      // A streaming endpoint wraps its first message in "result".
      if (parsed.contains("result") && parsed["result"].is_object()) parsed = parsed["result"];
      if (parsed.contains("error")) {
        auto message = parsed.value("message", parsed["error"].dump());
        // gRPC code 5: not found (an expired lease, say).
        return core::make_error(number(parsed, "code") == 5 ? Errc::unknown_name : Errc::wrong_state,
                                "etcd " + path + ": " + message);
      }
      return parsed;
    }
    return core::make_error(Errc::unavailable, "etcd is unreachable (" + failures + ")");
  }
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

Expected<Client> Client::make(Options options) {
  if (options.endpoints.empty()) return core::make_error(Errc::invalid_argument, "etcd: no endpoints");
  for (const auto& e : options.endpoints) {
    auto colon = e.rfind(':');
    bool https = e.rfind("https://", 0) == 0;
    size_t scheme = https ? 8 : 7;
    if ((!https && e.rfind("http://", 0) != 0) || colon == std::string::npos || colon <= scheme ||
        colon + 1 == e.size())
      return core::make_error(Errc::invalid_argument,
                              "etcd endpoint '" + e + "' is not http://HOST:PORT or https://HOST:PORT");
    if (https && options.ca.empty())
      return core::make_error(Errc::invalid_argument, "etcd endpoint '" + e +
                                                          "' is HTTPS: give the CA that signed etcd's certificate "
                                                          "([ha] etcd_ca, or [tls] ca)");
  }
  if (options.cert.empty() != options.key.empty())
    return core::make_error(Errc::invalid_argument, "etcd: a client certificate needs its key, and a key its certificate");
  if (options.timeout.count() <= 0) return core::make_error(Errc::invalid_argument, "etcd: timeout must be positive");
  auto impl = std::make_unique<Impl>();
  impl->connections.resize(options.endpoints.size());
  impl->options = std::move(options);
  return Client(std::move(impl));
}

const std::string& Client::endpoint() const { return impl_->options.endpoints[impl_->current]; }

Expected<Lease> Client::grant(std::chrono::seconds ttl) {
  auto r = impl_->post("/v3/lease/grant", {{"TTL", std::to_string(ttl.count())}});
  if (!r) return r.error();
  Lease lease{number(*r, "ID"), std::chrono::seconds(number(*r, "TTL"))};
  if (lease.id == 0) return core::make_error(Errc::corrupt, "etcd granted a lease without an id");
  return lease;
}

Expected<std::chrono::seconds> Client::keep_alive(int64_t lease) {
  auto r = impl_->post("/v3/lease/keepalive", {{"ID", std::to_string(lease)}});
  if (!r) return r.error();
  return std::chrono::seconds(std::max<int64_t>(0, number(*r, "TTL")));
}

Status Client::revoke(int64_t lease) {
  auto r = impl_->post("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
  if (!r && r.error().code != Errc::unknown_name) return r.error();  // already gone: done
  return Status::ok();
}

Expected<Range> Client::get(const std::string& key) {
  auto r = impl_->post("/v3/kv/range", {{"key", base64(key)}});
  if (!r) return r.error();
  auto kvs = key_values(*r);
  if (!kvs) return kvs.error();
  return Range{std::move(*kvs), number((*r)["header"], "revision")};
}

Expected<Range> Client::get_prefix(const std::string& prefix) {
  auto r = impl_->post("/v3/kv/range", {{"key", base64(prefix)}, {"range_end", base64(prefix_end(prefix))}});
  if (!r) return r.error();
  auto kvs = key_values(*r);
  if (!kvs) return kvs.error();
  return Range{std::move(*kvs), number((*r)["header"], "revision")};
}

Expected<int64_t> Client::put(const std::string& key, const std::string& value, int64_t lease) {
  json body{{"key", base64(key)}, {"value", base64(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  auto r = impl_->post("/v3/kv/put", body);
  if (!r) return r.error();
  return number((*r)["header"], "revision");
}

Status Client::erase(const std::string& key) {
  auto r = impl_->post("/v3/kv/deleterange", {{"key", base64(key)}});
  if (!r) return r.error();
  return Status::ok();
}

Expected<TxnResult> Client::txn(const std::vector<Compare>& compares, const std::vector<Operation>& success,
                                 const std::vector<Operation>& failure) {
  json body{{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const auto& c : compares) body["compare"].push_back(compare(c));
  for (const auto& op : success) body["success"].push_back(operation(op));
  for (const auto& op : failure) body["failure"].push_back(operation(op));
  auto r = impl_->post("/v3/kv/txn", body);
  if (!r) return r.error();
  TxnResult out;
  out.succeeded = r->value("succeeded", false);
  out.revision = number((*r)["header"], "revision");
  if (auto it = r->find("responses"); it != r->end() && it->is_array())
    for (const auto& response : *it)
      if (auto range = response.find("response_range"); range != response.end()) {
        auto kvs = key_values(*range);
        if (!kvs) return kvs.error();
        out.gets.push_back(std::move(*kvs));
      }
  return out;
}

}  // namespace claimsched::etcd
