// Unit tests of the trace replayer (check/replay.hpp), without starting a process.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "check/replay.hpp"

namespace {

namespace replay = tally::check::replay;
using replay::outcome;

// Parses and, if that succeeds, runs `text`.
replay::report run(const std::string& text) {
  std::istringstream in(text);
  auto parsed = replay::parse(in);
  if (auto* r = std::get_if<replay::report>(&parsed)) return *r;
  return replay::execute(std::get<replay::script>(parsed));
}

// `text` is rejected at `line` as malformed, with `why` in the message.
void expect_syntax_error(const std::string& text, std::size_t line, const std::string& why) {
  std::istringstream in(text);
  auto parsed = replay::parse(in);
  ASSERT_TRUE(std::holds_alternative<replay::report>(parsed)) << text;
  const auto& r = std::get<replay::report>(parsed);
  EXPECT_EQ(r.code, outcome::rejected) << text;
  EXPECT_EQ(r.line, line) << text;
  EXPECT_NE(r.message.find(why), std::string::npos) << text << "\nmessage: " << r.message;
}

TEST(ReplayParse, HeaderForms) {
  for (const char* text :
       {"ranks 3 owner 2\nexpect holder 2\n", "# comment\n\n  ranks 3   # trailing comment\nowner 2\nexpect holder 2\n",
        "ranks 3 owner 2\n", "nodes 3 owner 2\n"}) {  // the old spelling of the header, still accepted
    std::istringstream in(text);
    auto parsed = replay::parse(in);
    ASSERT_TRUE(std::holds_alternative<replay::script>(parsed)) << text;
    EXPECT_EQ(std::get<replay::script>(parsed).ranks, 3);
    EXPECT_EQ(std::get<replay::script>(parsed).owner, 2);
  }
  std::istringstream in("ranks 2\n");
  EXPECT_EQ(std::get<replay::script>(replay::parse(in)).owner, 0);
}

TEST(ReplayParse, StatementsAndLineNumbers) {
  std::istringstream in(
      "ranks 3\n"
      "# a comment line\n"
      "request 1\n"
      "deliver 1 0 1   # with a sequence\n"
      "deliver 1 2\n"
      "expect rn 0 1=1\n"
      "expect queue\n"
      "expect queue 2 1\n"
      "expect inflight none\n");
  const auto s = std::get<replay::script>(replay::parse(in));
  ASSERT_EQ(s.body.size(), 7u);
  using op = replay::statement::op;
  EXPECT_EQ(s.body[0].what, op::request);
  EXPECT_EQ(s.body[0].line, 3u);
  EXPECT_EQ(s.body[1].value, 1u);
  EXPECT_EQ(s.body[1].text, "deliver 1 0 1");
  EXPECT_FALSE(s.body[2].value);
  EXPECT_EQ(s.body[3].what, op::rn);
  EXPECT_EQ(s.body[3].value, 1u);
  EXPECT_TRUE(s.body[4].list.empty());
  EXPECT_EQ(s.body[5].list, (std::vector<std::int32_t>{2, 1}));
  EXPECT_FALSE(s.body[6].a);
  EXPECT_EQ(s.body[6].line, 9u);
}

TEST(ReplayParse, SyntaxErrorsNameTheLine) {
  expect_syntax_error("", 0, "empty trace");
  expect_syntax_error("# only comments\n", 0, "empty trace");
  expect_syntax_error("request 1\n", 1, "first statement must be 'ranks N'");
  // Two-level traces.
  expect_syntax_error("cohort 0x2\n", 1, "expected a node count in [1, 4096], got '0'");
  expect_syntax_error("cohort 2x\n", 1, "expected ranks per node");
  expect_syntax_error("cohort 2,0,1\n", 1, "expected a node's rank count");
  expect_syntax_error("cohort 64x65\n", 1, "4160 ranks exceed 4096");
  expect_syntax_error("cohort 2x2 owner 2\n", 1, "owner node 2 out of range [0, 2)");
  expect_syntax_error("cohort 2x2 bound 0\n", 1, "pass bound outside");
  expect_syntax_error("cohort 2x2 boss 1\n", 1, "expected 'bound B' or 'owner K'");
  expect_syntax_error("cohort 2x2\ncohort 2x2\n", 2, "'cohort' may appear only once");
  expect_syntax_error("cohort 2x2\ndeliver 1 2\n", 2, "node 2 out of range [0, 2)");
  expect_syntax_error("cohort 2x2\nexpect holder 3\n", 2, "node 3 out of range [0, 2)");
  expect_syntax_error("cohort 2,1\nexpect incs 3\n", 2, "rank 3 out of range [0, 3)");
  expect_syntax_error("cohort 2x2\nexpect withdrawn 1\n", 2, "is for flat traces");
  expect_syntax_error("ranks 3\nexpect passes 0 = 1\n", 2, "is for two-level (cohort) traces");
  expect_syntax_error("ranks 3\nexpect local 0\n", 2, "is for two-level (cohort) traces");
  expect_syntax_error("ranks 0\n", 1, "rank count 0 outside [1, 4096]");
  expect_syntax_error("ranks 5000\n", 1, "outside [1, 4096]");
  expect_syntax_error("ranks -2\n", 1, "expected the rank count, got '-2'");
  expect_syntax_error("ranks 3 owner 3\n", 1, "rank 3 out of range [0, 3)");
  expect_syntax_error("ranks 3 boss 1\n", 1, "expected 'owner I'");
  expect_syntax_error("ranks 3\nrequest 1\nowner 1\n", 3, "must directly follow");
  expect_syntax_error("ranks 3 owner 1\nowner 2\n", 2, "must directly follow");
  expect_syntax_error("ranks 3\nnodes 3\n", 2, "only once");
  expect_syntax_error("ranks 3\n\nfly 1\n", 3, "unknown statement 'fly'");
  expect_syntax_error("ranks 3\nrequest\n", 2, "missing a rank id");
  expect_syntax_error("ranks 3\nrequest x\n", 2, "expected a rank id, got 'x'");
  expect_syntax_error("ranks 3\nrequest 1 2\n", 2, "unexpected '2'");
  expect_syntax_error("ranks 3\ndeliver 1 3\n", 2, "rank 3 out of range [0, 3)");
  expect_syntax_error("ranks 3\ndeliver 1 0 99999999999999999999\n", 2, "expected a sequence number");
  expect_syntax_error("ranks 3\ntoken 1\n", 2, "unexpected '1'");
  expect_syntax_error("ranks 3\nexpect\n", 2, "missing what to expect");
  expect_syntax_error("ranks 3\nexpect owner 1\n", 2, "unknown expectation 'owner'");
  expect_syntax_error("ranks 3\nexpect rn 0 1 1\n", 2, "expected '=' before the value");
  expect_syntax_error("ranks 3\nexpect ln 0 =\n", 2, "missing value");
  expect_syntax_error("ranks 3\nexpect pending 0 1 = -1\n", 2, "expected count");
  expect_syntax_error("ranks 3\nexpect holder nobody\n", 2, "expected a rank id or 'none'");
  expect_syntax_error("ranks 3\nexpect queue 1 5\n", 2, "rank 5 out of range");
  // The message quotes the statement.
  expect_syntax_error("ranks 3\n  exit   9  # x\n", 2, "syntax error in `exit 9`");
}

TEST(ReplayExecute, PassCountsStepsAndExpects) {
  const auto r =
      run("ranks 2\n"
          "request 1\n"
          "deliver 1 0\n"
          "expect inflight 1\n"
          "token\n"
          "expect incs 1\n"
          "expect messages = 2\n");
  EXPECT_EQ(r.code, outcome::pass) << r.message;
  EXPECT_EQ(r.steps, 3u);
  EXPECT_EQ(r.expects, 3u);
  EXPECT_EQ(r.line, 0u);
}

TEST(ReplayExecute, EveryExpectationCanFail) {
  const std::string prefix = "ranks 3\nrequest 0\nrequest 1\ndeliver 1 0\n";  // rank 0 in CS, rank 1 waiting
  const std::pair<const char*, const char*> cases[] = {
      {"expect holder 1", "expected the token held by rank 1, found it held by rank 0"},
      {"expect holder none", "expected the token in flight, found it held by rank 0"},
      {"expect incs 1", "expected rank 1 in CS, found requesting"},
      {"expect idle 0", "expected rank 0 idle, found in CS"},
      {"expect requesting 2", "expected rank 2 requesting, found idle"},
      {"expect withdrawn 1", "expected rank 1 withdrawn, found requesting"},
      {"expect rn 0 1 = 2", "expected RN_0[1] = 2, found 1"},
      {"expect ln 0 = 1", "expected LN[0] = 1, found 0"},
      {"expect queue 1", "expected Q = [1], found []"},
      {"expect inflight 1", "expected the token in flight to rank 1, found it held by rank 0"},
      {"expect pending 1 2 = 0", "expected 0 pending REQUEST(s) from rank 1 to rank 2, found 1"},
      {"expect messages = 3", "expected 3 messages sent, found 2"},
  };
  for (const auto& [expect, found] : cases) {
    const auto r = run(prefix + expect + "\n");
    EXPECT_EQ(r.code, outcome::failed) << expect;
    EXPECT_EQ(r.line, 5u) << expect;
    EXPECT_EQ(r.message, "`" + std::string(expect) + "` failed: " + found);
    EXPECT_NE(r.state.find("rank 0: in CS, holds the token"), std::string::npos) << r.state;
  }
}

TEST(ReplayExecute, RejectedStepStopsAtItsLine) {
  const auto r =
      run("ranks 2\n"
          "request 1\n"
          "exit 0\n"
          "expect holder 1\n");  // never reached
  EXPECT_EQ(r.code, outcome::rejected);
  EXPECT_EQ(r.line, 3u);
  EXPECT_EQ(r.message, "step `exit 0` rejected: exit at rank 0: not in the critical section (rank is idle)");
  EXPECT_EQ(r.steps, 1u);
  EXPECT_EQ(r.expects, 0u);
}

TEST(ReplayExecute, WithdrawAndRearm) {
  const auto r = run("ranks 2\nrequest 1\nwithdraw 1\nexpect withdrawn 1\nwithdraw 1\n");
  EXPECT_EQ(r.code, outcome::rejected);
  EXPECT_EQ(r.line, 5u);
  EXPECT_NE(r.message.find("not requesting"), std::string::npos) << r.message;
  EXPECT_EQ(run("ranks 2\nrequest 1\nwithdraw 1\nrequest 1\nexpect messages = 1\n").code, outcome::pass);
}

TEST(ReplayFile, MissingFileIsAClearRejection) {
  const auto r = replay::run_file("/nonexistent/dir/x.trace");
  EXPECT_EQ(r.code, outcome::rejected);
  EXPECT_EQ(r.line, 0u);
  EXPECT_EQ(r.message, "cannot read trace: No such file or directory");
  EXPECT_EQ(replay::format(r, "x.trace"), "x.trace: cannot read trace: No such file or directory\n");
  EXPECT_EQ(replay::run_file("/").message, "cannot read trace: it is a directory");
}

TEST(ReplayFormat, NamesFileAndLine) {
  const auto failed = run("ranks 2\nexpect holder 1\n");
  const std::string text = replay::format(failed, "t.trace");
  EXPECT_EQ(text.rfind("t.trace:2: `expect holder 1` failed: ", 0), 0u) << text;
  EXPECT_NE(text.find("state after line 2:\n  rank 0: idle, holds the token, RN = [0 0]\n"), std::string::npos) << text;
  EXPECT_EQ(replay::format(run("ranks 2\nrequest 0\n"), "ok.trace"), "ok.trace: pass (1 steps, 0 expects)\n");
}

TEST(ReplayMain, UsageAndExitStatus) {
  std::ostringstream out, err;
  const std::vector<std::string_view> none, help{"--help"}, two{"a", "b"}, missing{"/nonexistent"};
  EXPECT_EQ(replay::main(none, out, err), 2);
  EXPECT_NE(err.str().find("usage: tally-sim replay FILE"), std::string::npos);
  EXPECT_EQ(replay::main(two, out, err), 2);
  EXPECT_EQ(replay::main(missing, out, err), 2);
  EXPECT_NE(err.str().find("/nonexistent: cannot read trace"), std::string::npos);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(replay::main(help, out, err), 0);
  EXPECT_NE(out.str().find("usage: tally-sim replay FILE"), std::string::npos);
}

}  // namespace
