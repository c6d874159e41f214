#include "actors/peer_proof.hpp"

#include <random>
#include <sstream>

namespace claimsched::actors {

namespace {

constexpr const char* kRegisterTag = "claimsched-register-v1";
constexpr const char* kLoginTag = "claimsched-login-v1";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

core::Error refused(std::string why) { return core::make_error(core::Errc::invalid_argument, std::move(why)); }

}  // namespace

std::string registration_message(const std::string& nonce, const std::string& server_cn,
                                 const std::vector<std::pair<std::string, std::string>>& actor_and_name) {
  std::string m = std::string(kRegisterTag) + "\n" + nonce + "\n" + server_cn + "\n";
  for (const auto& [actor, name] : actor_and_name) m += actor + " " + name + "\n";
  return m;
}

std::string login_message(const std::string& nonce, const std::string& server_cn) {
  return std::string(kLoginTag) + "\n" + nonce + "\n" + server_cn + "\n";
}

std::string Challenges::issue(core::TimePoint now) {
  // Expired ones go first; then, past the cap, the oldest.
  for (auto it = issued_.begin(); it != issued_.end();)
    it = it->second + kChallengeTtl < now ? issued_.erase(it) : std::next(it);
  while (issued_.size() >= kMaxChallenges) {
    auto oldest = issued_.begin();
    for (auto it = issued_.begin(); it != issued_.end(); ++it)
      if (it->second < oldest->second) oldest = it;
    issued_.erase(oldest);
  }
  static thread_local std::random_device device;
  static const char* hex = "0123456789abcdef";
  std::string nonce;
  for (int i = 0; i < 4; ++i) {
    uint32_t word = device();
    for (int j = 0; j < 8; ++j, word >>= 4) nonce += hex[word & 15];
  }
  issued_[nonce] = now;
  return nonce;
}

bool Challenges::use(const std::string& nonce, core::TimePoint now) {
  auto it = issued_.find(nonce);
  if (it == issued_.end()) return false;
  bool fresh = now <= it->second + kChallengeTtl;
  issued_.erase(it);  // one proof per challenge, good or bad
  return fresh;
}

core::Expected<PeerIdentity> LoginProofs::prove(const std::string& cert_pem, const std::string& message,
                                                const std::string& signature, core::TimePoint now) {
  auto lines = lines_of(message);
  if (lines.size() != 3 || lines[0] != kLoginTag) return refused("not a login proof");
  if (!challenges_.use(lines[1], now))
    return refused("the login proof names no challenge of this server (or an expired one): ask for a new one");
  auto own = own_identity();
  if (!own) return core::make_error(core::Errc::wrong_state, "TLS is off on this server: no certificate to log in by");
  if (lines[2] != own->cn) return refused("the login proof was made for server '" + lines[2] + "', not this one");
  // verify_signed names the certificate and, for another role, its role.
  return verify_signed(cert_pem, message, signature, PeerRole::client);
}

core::Expected<PeerIdentity> RegistrationProofs::prove(const std::string& cert_pem, const std::string& message,
                                                       const std::string& signature, core::TimePoint now) {
  auto lines = lines_of(message);
  if (lines.size() < 4 || lines[0] != kRegisterTag) return refused("not a registration proof");
  if (!challenges_.use(lines[1], now))
    return refused("the proof names no challenge of this server (or an expired one): ask for a new one");
  auto own = own_identity();
  if (!own || lines[2] != own->cn) return refused("the proof was made for server '" + lines[2] + "', not this one");
  auto id = verify_signed(cert_pem, message, signature, PeerRole::agent);
  if (!id) return id.error();
  for (size_t i = 3; i < lines.size(); ++i) {
    auto space = lines[i].find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == lines[i].size())
      return refused("line " + std::to_string(i + 1) + " of the proof is not 'ACTOR NAME'");
  }
  for (auto it = proven_.begin(); it != proven_.end();) it = it->second.until < now ? proven_.erase(it) : std::next(it);
  for (size_t i = 3; i < lines.size(); ++i) {
    auto space = lines[i].find(' ');
    proven_[lines[i].substr(space + 1)] = {lines[i].substr(0, space), id->cn, now + kProofTtl};
  }
  return *id;
}

core::Status RegistrationProofs::admit(const std::string& name, const std::string& actor_address, core::TimePoint now) {
  auto it = proven_.find(name);
  // wrong_state: an agent may prove again and retry.
  if (it == proven_.end() || it->second.until < now)
    return core::make_error(
        core::Errc::wrong_state,
        "node " + name +
            ": no agent certificate proved this registration (TLS is on: an agent proves it holds an agent "
            "certificate before it registers)");
  if (it->second.actor != actor_address)
    return core::make_error(core::Errc::wrong_state,
                            "node " + name + ": the proof of agent '" + it->second.cn + "' names another actor");
  return core::Status::ok();
}

}  // namespace claimsched::actors
