// The tokens file and the rules of who may do what (core/auth.hpp).

#include "core/auth.hpp"

#include <gtest/gtest.h>

namespace claimsched::core::auth {
namespace {

constexpr const char* kAlice = "alice-token-0123456789";
constexpr const char* kBob = "bob-token-0123456789ab";
constexpr const char* kOps = "ops-token-0123456789ab";
constexpr const char* kRoot = "root-token-0123456789a";

TokenTable table() {
  std::string text = std::string("# who may do what\n\n") + kAlice + "  alice\n" + kBob + "\tbob\r\n" + kOps +
                     " ops operator\n" + kRoot + " root admin,operator\n";
  auto t = TokenTable::parse(text, "tokens");
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
  return *t;
}

Principal who(const char* token) { return *resolve(table(), Credentials{token, ""}); }

TEST(TokenTable, ResolvesEachTokenToItsUserAndRoles) {
  auto t = table();
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(who(kAlice).user, "alice");
  EXPECT_FALSE(who(kAlice).is_operator());
  EXPECT_EQ(who(kBob).user, "bob");
  EXPECT_TRUE(who(kOps).is_operator());
  EXPECT_FALSE(who(kOps).is_admin());
  EXPECT_TRUE(who(kRoot).is_admin());
  EXPECT_EQ(who(kRoot).roles(), "admin,operator");
}

TEST(TokenTable, AnUnknownOrMissingTokenIsUnauthenticatedAndNeverEchoed) {
  auto t = table();
  auto unknown = resolve(t, Credentials{"not-a-token-of-this-server", ""});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, Errc::unauthenticated);
  EXPECT_EQ(unknown.error().message.find("not-a-token"), std::string::npos);
  auto none = resolve(t, Credentials{});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message.find("--token-file"), std::string::npos);
}

/// The error of parsing `text`, which must fail.
std::string parse_error(const std::string& text) {
  auto t = TokenTable::parse(text, "/etc/claimsched/tokens");
  EXPECT_FALSE(t.has_value()) << text;
  return t ? "" : t.error().message;
}

TEST(TokenTable, EachMistakeIsNamedWithItsLineAndNeverShowsTheToken) {
  std::string ok = std::string(kAlice) + " alice\n";
  EXPECT_EQ(parse_error(ok + "short bob\n"),
            "tokens file /etc/claimsched/tokens line 2: the token has 5 characters; a token has 16 to 256 (e.g. "
            "`openssl rand -hex 16`)");
  EXPECT_EQ(parse_error(ok + "# c\n" + kBob + "\n"),
            "tokens file /etc/claimsched/tokens line 3: expected TOKEN USER [ROLES], got only one field");
  EXPECT_NE(parse_error(ok + kBob + " bob operator, admin\n").find("line 2: expected TOKEN USER [ROLES], got 4"),
            std::string::npos);
  EXPECT_NE(parse_error(ok + kBob + " bob superuser\n").find("line 2: unknown role 'superuser'"), std::string::npos);
  EXPECT_NE(parse_error(ok + kBob + " bob admin,admin\n").find("line 2: role 'admin' is given twice"),
            std::string::npos);
  EXPECT_NE(parse_error(ok + kBob + " b@b\n").find("line 2: user 'b@b' is not"), std::string::npos);
  EXPECT_NE(parse_error(ok + "bob-token-01234567\xc3\xa9 bob\n").find("line 2: the token has a character outside"),
            std::string::npos);
  std::string twice = parse_error(ok + "\n" + kAlice + " mallory\n");
  EXPECT_NE(twice.find("line 3: the same token as line 1"), std::string::npos);
  EXPECT_EQ(twice.find(kAlice), std::string::npos);
  EXPECT_NE(parse_error("# nothing\n\n").find("has no users"), std::string::npos);
  std::string cert_twice = parse_error(ok + "- carol\n- carol operator\n");
  EXPECT_NE(cert_twice.find("line 3: user 'carol' has a certificate line already (line 2)"), std::string::npos)
      << cert_twice;
}

// Found by fuzz_auth_tokens: a token written in the roles or user column (two
// tokens on one line, columns swapped) was quoted back in full.
TEST(TokenTable, ATokenInTheWrongColumnIsNotShownEither) {
  std::string role = parse_error(std::string(kAlice) + " alice " + kBob + "\n");
  EXPECT_NE(role.find("line 1: unknown role of 22 characters (not shown"), std::string::npos) << role;
  EXPECT_EQ(role.find(kBob), std::string::npos) << role;
  std::string user = parse_error(std::string(kAlice) + " " + kBob + "+/= admin\n");
  EXPECT_NE(user.find("line 1: user of 25 characters (not shown"), std::string::npos) << user;
  EXPECT_EQ(user.find(kBob), std::string::npos) << user;
}

// Client certificates: the CN is a user of the file (token lines or `-`
// lines), with the least roles of that user's lines; a token decides alone.
TEST(TokenTable, ACertificateLogsInAsAUserOfTheFileWithTheLeastRolesOfItsLines) {
  std::string text = std::string(kAlice) + " alice\n- carol operator\n" + kOps + " ops operator\n" + kRoot +
                     " ops admin\n" + kBob + " bob operator\n- bob\n";
  auto t = TokenTable::parse(text, "tokens");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->size(), 4u);
  EXPECT_EQ(t->users(), 4u);
  auto by_cert = [&](const char* cn) { return resolve(*t, Credentials{"", cn}); };
  auto alice = by_cert("alice");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->user, "alice");
  EXPECT_EQ(alice->via, "certificate");
  EXPECT_EQ(alice->roles(), "");
  EXPECT_EQ(by_cert("carol")->roles(), "operator");
  // operator and admin lines: operator (admin includes it); operator and a
  // plain `-` line: a plain user.
  EXPECT_EQ(by_cert("ops")->roles(), "operator");
  EXPECT_EQ(by_cert("bob")->roles(), "");
  // The token still gives its own line's roles.
  EXPECT_EQ(resolve(*t, Credentials{kRoot, ""})->roles(), "admin");
  EXPECT_EQ(resolve(*t, Credentials{kBob, ""})->roles(), "operator");
  // No line: refused, and the error says how to let it in.
  auto mallory = by_cert("mallory");
  ASSERT_FALSE(mallory.has_value());
  EXPECT_EQ(mallory.error().code, Errc::unauthenticated);
  EXPECT_NE(mallory.error().message.find("'- mallory' would let its certificate in"), std::string::npos)
      << mallory.error().message;
  // A token decides alone: an unknown one is refused even with a good certificate.
  auto both = resolve(*t, Credentials{"not-a-token-of-this-server", "alice"});
  ASSERT_FALSE(both.has_value());
  EXPECT_EQ(both.error().code, Errc::unauthenticated);
  EXPECT_EQ(resolve(*t, Credentials{kOps, "alice"})->user, "ops");
  // `-` is not a token: nobody logs in with it.
  EXPECT_FALSE(resolve(*t, Credentials{"-", ""}).has_value());
  // A file of certificate users only is a file.
  auto only = TokenTable::parse("- carol\n", "tokens");
  ASSERT_TRUE(only.has_value());
  EXPECT_EQ(only->size(), 0u);
  EXPECT_EQ(only->users(), 1u);
}

TEST(Authorize, APlainUserSubmitsAndReadsOnlyAsThemselves) {
  auto alice = who(kAlice);
  EXPECT_TRUE(authorize(alice, Action::submit, "a job", "").is_ok());
  EXPECT_TRUE(authorize(alice, Action::submit, "a job", "alice").is_ok());
  auto as_bob = authorize(alice, Action::submit, "a job", "bob");
  ASSERT_FALSE(as_bob.is_ok());
  EXPECT_EQ(as_bob.error().code, Errc::permission_denied);
  EXPECT_NE(as_bob.error().message.find("it names user bob"), std::string::npos);
  EXPECT_TRUE(authorize(alice, Action::read_job, "job 1", "alice").is_ok());
  EXPECT_TRUE(authorize(alice, Action::cancel_job, "job 1", "alice").is_ok());
  auto cancel = authorize(alice, Action::cancel_job, "job 2", "bob");
  ASSERT_FALSE(cancel.is_ok());
  EXPECT_EQ(cancel.error().message,
            "user alice may not cancel job 2: it belongs to user bob; another user's jobs need the operator role");
  EXPECT_FALSE(authorize(alice, Action::read_job, "job 2", "bob").is_ok());
  EXPECT_FALSE(authorize(alice, Action::list_jobs, "jobs of user bob", "bob").is_ok());
  EXPECT_TRUE(authorize(alice, Action::read_cluster, "nodes", "").is_ok());
}

TEST(Authorize, AnOperatorReadsAndCancelsAnyonesButOnlyAnAdminChangesTheCluster) {
  auto ops = who(kOps);
  EXPECT_TRUE(authorize(ops, Action::cancel_job, "job 2", "bob").is_ok());
  EXPECT_TRUE(authorize(ops, Action::read_job, "job 2", "bob").is_ok());
  // Even an operator submits only as themselves.
  EXPECT_FALSE(authorize(ops, Action::submit, "a job", "bob").is_ok());
  for (auto action : {Action::drain_node, Action::remove_pool, Action::move_partition}) {
    auto s = authorize(ops, action, "node n1", "");
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.error().message.find("needs the admin role"), std::string::npos);
    EXPECT_FALSE(authorize(who(kAlice), action, "node n1", "").is_ok());
    EXPECT_TRUE(authorize(who(kRoot), action, "node n1", "").is_ok());
  }
  // admin includes operator.
  auto admin_only = TokenTable::parse(std::string(kRoot) + " root admin\n", "t");
  ASSERT_TRUE(admin_only.has_value());
  auto root = *resolve(*admin_only, Credentials{kRoot, ""});
  EXPECT_TRUE(authorize(root, Action::cancel_job, "job 2", "bob").is_ok());
}

}  // namespace
}  // namespace claimsched::core::auth
