// Workload traces for `claimsched replay`: SWF and CSV parsing (what each
// field becomes, what is skipped and why), detection, and reading files
// plain or gzip, down to the real KTH SP2 log.

#include "core/replay/trace.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "apps/trace_file.hpp"

// Built in one unity file with the other tests of replay_tests: the helpers
// live in their own namespace so no name can meet another file's.
namespace claimsched::core::replay::trace_test {
namespace {

constexpr int64_t kKi = int64_t{1} << 10;

Trace parse_swf_ok(std::string_view text) {
  auto trace = parse_swf(text);
  EXPECT_TRUE(trace) << trace.error().to_string();
  return trace ? *trace : Trace{};
}

Trace parse_csv_ok(std::string_view text) {
  auto trace = parse_csv(text);
  EXPECT_TRUE(trace) << trace.error().to_string();
  return trace ? *trace : Trace{};
}

uint64_t total_skipped(const Trace& trace) {
  return std::accumulate(trace.skipped.begin(), trace.skipped.end(), uint64_t{0},
                         [](uint64_t sum, const auto& entry) { return sum + entry.second; });
}

// --- SWF ----------------------------------------------------------------------

TEST(SwfParse, EveryFieldOfALineLandsWhereDocumented) {
  //  1 job  2 submit 3 wait 4 run 5 alloc 6 avg-cpu 7 used-mem 8 req-procs 9 req-time
  // 10 req-mem 11 status 12 user 13 group 14 exe 15 queue 16 partition 17 preceding 18 think
  auto trace = parse_swf_ok("7 100 30 600 4 550.5 2048 8 3600 1024 5 12 13 14 15 16 3 20\n");
  ASSERT_EQ(trace.jobs.size(), 1u);
  const TraceJob& job = trace.jobs[0];
  EXPECT_EQ(job.number, 7u);
  EXPECT_EQ(job.line, 1u);
  EXPECT_EQ(job.submit_s, 100);
  EXPECT_EQ(job.wait_s, 30);
  EXPECT_EQ(job.run_s, 600);
  EXPECT_EQ(job.tasks, 4u) << "allocated processors win over requested ones";
  EXPECT_DOUBLE_EQ(job.average_cpu_s, 550.5);
  EXPECT_EQ(job.used_memory_kb, 2048);
  EXPECT_EQ(job.requested_time_s, 3600);
  EXPECT_EQ(job.per_task[dim::cpu], 1000) << "one processor per task, in millicores";
  EXPECT_EQ(job.per_task[dim::memory], 1024 * kKi) << "requested memory per processor wins over used memory";
  EXPECT_EQ(job.status, 5);
  EXPECT_EQ(job.user, "12");
  EXPECT_EQ(job.group, "13");
  EXPECT_EQ(job.executable, "14");
  EXPECT_EQ(job.queue, "15");
  EXPECT_EQ(job.partition, "16");
  EXPECT_EQ(job.preceding_job, 3);
  EXPECT_EQ(job.think_time_s, 20);
  EXPECT_TRUE(job.job_class.empty());
  EXPECT_TRUE(job.pool.empty());
  EXPECT_EQ(trace.data_lines, 1u);
  EXPECT_TRUE(trace.skipped.empty());
}

TEST(SwfParse, MinusOneMeansUnknown) {
  auto trace = parse_swf_ok(
      "-1 5 -1 60 -1 -1 -1 3 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n"
      "-1 6 0 60 2 -1 4096 -1 0 -1 1 -1 -1 -1 -1 -1 -1 -1\n");
  ASSERT_EQ(trace.jobs.size(), 2u);
  const TraceJob& unknowns = trace.jobs[0];
  EXPECT_EQ(unknowns.number, 1u) << "no job number: the data line's ordinal";
  EXPECT_EQ(unknowns.wait_s, std::nullopt);
  EXPECT_EQ(unknowns.tasks, 3u) << "no allocated processors: the requested ones";
  EXPECT_EQ(unknowns.requested_time_s, std::nullopt);
  EXPECT_EQ(unknowns.per_task, Resources::of({{dim::cpu, 1000}})) << "no memory known: none asked";
  EXPECT_EQ(unknowns.status, -1);
  EXPECT_EQ(unknowns.user, "");
  EXPECT_EQ(unknowns.group, "");
  EXPECT_EQ(unknowns.executable, "");
  EXPECT_EQ(unknowns.queue, "");
  EXPECT_EQ(unknowns.partition, "");
  EXPECT_EQ(unknowns.average_cpu_s, -1);
  EXPECT_EQ(unknowns.used_memory_kb, -1);

  const TraceJob& used_memory = trace.jobs[1];
  EXPECT_EQ(used_memory.number, 2u);
  EXPECT_EQ(used_memory.wait_s, 0) << "a wait of 0 is known";
  EXPECT_EQ(used_memory.requested_time_s, std::nullopt) << "a requested time of 0 is no limit";
  EXPECT_EQ(used_memory.per_task[dim::memory], 4096 * kKi) << "no requested memory: the used memory";
}

TEST(SwfParse, HeaderCommentsAreRecordedInOrder) {
  auto trace = parse_swf_ok(
      "; Version: 2.2\n"
      "; Information: http://www.pdc.kth.se/\n"
      ";              http://www.cs.huji.ac.il/labs/parallel/workload/\n"
      "; UnixStartTime: 843480031\n"
      "; EndTime:   Fri Aug 29 10:55:01 CEST 1997\n"
      "; MaxNodes: 100\n"
      "; MaxProcs: 128\n"
      ";\n"
      "; Note: first\n"
      ";       job<=14 (14 jobs removed)\n"
      "; Note: second\n"
      "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
  EXPECT_EQ(trace.header.max_nodes, 100u);
  EXPECT_EQ(trace.header.max_procs, 128u);
  EXPECT_EQ(trace.header.unix_start_time, 843480031);
  std::vector<std::pair<std::string, std::string>> expected = {{"Version", "2.2"},
                                                               {"Information", "http://www.pdc.kth.se/"},
                                                               {"UnixStartTime", "843480031"},
                                                               {"EndTime", "Fri Aug 29 10:55:01 CEST 1997"},
                                                               {"MaxNodes", "100"},
                                                               {"MaxProcs", "128"},
                                                               {"Note", "first"},
                                                               {"Note", "second"}};
  EXPECT_EQ(trace.header.fields, expected) << "continuation lines are not fields";
  EXPECT_EQ(trace.data_lines, 1u);
  EXPECT_EQ(trace.jobs.at(0).line, 12u);
}

TEST(SwfParse, WithoutAHeaderNothingIsGuessed) {
  auto trace = parse_swf_ok("; MaxNodes: many\n1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
  EXPECT_EQ(trace.header.max_nodes, std::nullopt);
  EXPECT_EQ(trace.header.max_procs, std::nullopt);
  EXPECT_EQ(trace.header.unix_start_time, std::nullopt);
  ASSERT_EQ(trace.header.fields.size(), 1u);
  EXPECT_EQ(trace.header.fields[0].second, "many");
}

// One line per reason, numbered as a reader of the file would count them.
constexpr std::string_view kMalformedSwf =
    "; header\n"                                         // 1
    "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"    // 2: fine
    "2 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1\n"       // 3: 17 fields
    "\n"                                                 // 4
    "3 0 0 1x 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"    // 5: not a number
    "4 0 0 10.5 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"  // 6: a fraction
    "5 0 0 -1 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"    // 7: run time unknown
    "6 0 0 10 -1 -1 -1 0 60 -1 1 1 1 -1 -1 -1 -1 -1\n"   // 8: no processors
    "7 -5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"   // 9: negative submit
    "8 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1 0\n"  // 10: 19 fields
    "9 9 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n";   // 11: fine

TEST(SwfParse, MalformedLinesAreSkippedCountedAndKeptWithTheirLineNumbers) {
  auto trace = parse_swf_ok(kMalformedSwf);
  ASSERT_EQ(trace.jobs.size(), 2u);
  EXPECT_EQ(trace.jobs[0].number, 1u);
  EXPECT_EQ(trace.jobs[1].number, 9u);
  std::map<std::string, uint64_t> expected_counts = {
      {"fields", 2}, {"number", 2}, {"run_time", 1}, {"processors", 1}, {"submit", 1}};
  EXPECT_EQ(trace.skipped, expected_counts);
  EXPECT_EQ(trace.data_lines, 9u) << "jobs + skipped; the comment and the blank line are not data";
  EXPECT_EQ(trace.data_lines, trace.jobs.size() + total_skipped(trace));

  struct ExpectedProblem {
    uint64_t line;
    std::string_view reason;
    std::string_view message;
  };
  std::vector<ExpectedProblem> expected = {
      {3, "fields", "line 3: expected 18 fields, found 17"},
      {5, "number", "line 5: field 4 (run time): '1x' is not a number"},
      {6, "number", "line 6: field 4 (run time): '10.5' is not a whole number"},
      {7, "run_time", "line 7: field 4 (run time) is unknown (-1)"},
      {8, "processors",
       "line 8: neither field 5 (allocated processors) nor field 8 (requested processors) is positive (-1, 0)"},
      {9, "submit", "line 9: field 2 (submit time) is negative (-5)"},
      {10, "fields", "line 10: expected 18 fields, found 19"},
  };
  ASSERT_EQ(trace.problems.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(trace.problems[i].line, expected[i].line);
    EXPECT_EQ(trace.problems[i].reason, expected[i].reason);
    EXPECT_EQ(trace.problems[i].message, expected[i].message);
  }
}

TEST(SwfParse, StrictMakesEachMalformedLineFatalNamingItsLine) {
  const std::string fine = "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n";
  for (std::string_view bad : {"2 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1",         // fields
                               "3 0 0 abc 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1",     // number
                               "5 0 0 -1 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1",      // run_time
                               "6 0 0 10 0 -1 -1 -1 60 -1 1 1 1 -1 -1 -1 -1 -1",     // processors
                               "7 -1 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1"}) {  // submit
    std::string text = "; c\n" + fine + "\n" + std::string(bad) + "\n" + fine;
    EXPECT_TRUE(parse_swf(text)) << bad;
    auto strict = parse_swf(text, TraceOptions{.strict = true});
    ASSERT_FALSE(strict) << bad;
    EXPECT_EQ(strict.error().code, Errc::parse_error);
    EXPECT_TRUE(strict.error().message.starts_with("line 4: ")) << strict.error().message;
  }
  EXPECT_TRUE(parse_swf(fine + fine, TraceOptions{.strict = true}));
}

TEST(SwfParse, BlankLinesCommentsAndCrlfAreNotDataLines) {
  auto trace = parse_swf_ok(
      "\r\n"
      "   \t \n"
      "; comment\r\n"
      "  1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\r\n"
      "\t2\t0\t0\t10\t1\t-1\t-1\t1\t60\t-1\t1\t1\t1\t-1\t-1\t-1\t-1\t-1\n"
      "; a comment between jobs\n"
      "3 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1");  // no final newline
  ASSERT_EQ(trace.jobs.size(), 3u);
  EXPECT_EQ(trace.data_lines, 3u);
  EXPECT_TRUE(trace.skipped.empty());
  EXPECT_EQ(trace.jobs[0].line, 4u);
  EXPECT_EQ(trace.jobs[1].line, 5u);
  EXPECT_EQ(trace.jobs[2].line, 7u);
  EXPECT_EQ(trace.jobs[2].number, 3u);
}

TEST(SwfParse, JobsAreInSubmitOrderTiesInTheTracesOrder) {
  auto trace = parse_swf_ok(
      "1 50 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
      "2 20 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
      "3 50 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
      "4 20 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
  std::vector<uint64_t> order;
  for (const auto& job : trace.jobs) order.push_back(job.number);
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 4, 1, 3}));
}

TEST(SwfParse, WholeNumbersMayCarryAZeroFractionAverageCpuAnyFraction) {
  auto trace = parse_swf_ok("1 0.0 0 60.00 2.0 12.25 -1 2 3600.0 -1 1 7.0 1 -1 -1 -1 -1 -1\n");
  ASSERT_EQ(trace.jobs.size(), 1u) << (trace.problems.empty() ? "" : trace.problems[0].message);
  EXPECT_EQ(trace.jobs[0].run_s, 60);
  EXPECT_EQ(trace.jobs[0].tasks, 2u);
  EXPECT_EQ(trace.jobs[0].requested_time_s, 3600);
  EXPECT_EQ(trace.jobs[0].user, "7");
  EXPECT_DOUBLE_EQ(trace.jobs[0].average_cpu_s, 12.25);

  auto fraction = parse_swf_ok("1 0 0 60 2 -1 -1 2 3600 -1 1 7.5 1 -1 -1 -1 -1 -1\n");
  EXPECT_TRUE(fraction.jobs.empty());
  ASSERT_EQ(fraction.problems.size(), 1u);
  EXPECT_EQ(fraction.problems[0].message, "line 1: field 12 (user): '7.5' is not a whole number");
  auto not_finite = parse_swf_ok("1 0 0 60 2 nan -1 2 3600 -1 1 7 1 -1 -1 -1 -1 -1\n");
  EXPECT_EQ(not_finite.skipped, (std::map<std::string, uint64_t>{{"number", 1}}));
}

TEST(SwfParse, EveryProblemIsCountedTheFirstOnesKeptInFull) {
  std::string text;
  for (int i = 0; i < 25; ++i) text += "1 0 0 -1 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n";
  auto trace = parse_swf_ok(text);
  EXPECT_EQ(trace.skipped.at("run_time"), 25u);
  EXPECT_EQ(trace.data_lines, 25u);
  ASSERT_EQ(trace.problems.size(), kMaxProblemsKept);
  EXPECT_EQ(trace.problems.back().line, kMaxProblemsKept);
}

// --- CSV ----------------------------------------------------------------------

TEST(CsvParse, ColumnsInAnyOrderWithResourcesInResourcesUnits) {
  auto trace = parse_csv_ok(
      " gpu , mem, duration,submit ,tasks,cpu,id,limit,wait,status,user,group,executable,queue,partition,class,pool\n"
      "1, 4Gi, 600, 100, 3, 500m, 42, 900, 7, 0, alice, staff, sim, q1, p2, batch, cpu-pool\n");
  ASSERT_EQ(trace.jobs.size(), 1u);
  const TraceJob& job = trace.jobs[0];
  EXPECT_EQ(job.number, 42u);
  EXPECT_EQ(job.line, 2u);
  EXPECT_EQ(job.submit_s, 100);
  EXPECT_EQ(job.run_s, 600);
  EXPECT_EQ(job.tasks, 3u);
  EXPECT_EQ(job.per_task, *Resources::parse("cpu=500m,memory=4Gi,gpu=1"));
  EXPECT_EQ(job.requested_time_s, 900);
  EXPECT_EQ(job.wait_s, 7);
  EXPECT_EQ(job.status, 0);
  EXPECT_EQ(job.user, "alice");
  EXPECT_EQ(job.group, "staff");
  EXPECT_EQ(job.executable, "sim");
  EXPECT_EQ(job.queue, "q1");
  EXPECT_EQ(job.partition, "p2");
  EXPECT_EQ(job.job_class, "batch");
  EXPECT_EQ(job.pool, "cpu-pool");
}

TEST(CsvParse, OnlySubmitAndDurationRequiredEmptyFieldsAreAbsent) {
  auto trace = parse_csv_ok(
      "submit,duration,limit,cpu,user\n"
      "10,5,,,\n"
      "3,1,0,2,bob\n");
  ASSERT_EQ(trace.jobs.size(), 2u);
  const TraceJob& defaults = trace.jobs[1];  // submitted at 10
  EXPECT_EQ(defaults.number, 1u) << "no id: the data line's ordinal";
  EXPECT_EQ(defaults.tasks, 1u);
  EXPECT_EQ(defaults.per_task, Resources::of({{dim::cpu, 1000}})) << "one processor, as SWF";
  EXPECT_EQ(defaults.requested_time_s, std::nullopt);
  EXPECT_EQ(defaults.wait_s, std::nullopt);
  EXPECT_EQ(defaults.status, -1);
  EXPECT_EQ(defaults.user, "");
  const TraceJob& second = trace.jobs[0];
  EXPECT_EQ(second.number, 2u);
  EXPECT_EQ(second.per_task[dim::cpu], 2000);
  EXPECT_EQ(second.requested_time_s, std::nullopt) << "a limit of 0 is no limit, as in SWF";
}

TEST(CsvParse, HeaderErrorsNameTheColumn) {
  auto unknown = parse_csv("submit,duration,memory\n1,2,3\n");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Errc::parse_error);
  EXPECT_NE(unknown.error().message.find("unknown column 'memory'"), std::string::npos) << unknown.error().message;
  EXPECT_TRUE(unknown.error().message.starts_with("line 1: ")) << unknown.error().message;

  auto no_duration = parse_csv("\nsubmit,tasks\n1,2\n");
  ASSERT_FALSE(no_duration);
  EXPECT_EQ(no_duration.error().message, "line 2: the header has no 'duration' column");

  auto twice = parse_csv("submit,duration,submit\n");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("'submit' appears twice"), std::string::npos) << twice.error().message;

  EXPECT_FALSE(parse_csv(""));
}

TEST(CsvParse, QuotedFieldsKeepCommasAndQuotes) {
  auto trace = parse_csv_ok(
      "submit,duration,user,executable,\"queue\"\n"
      "1,2, \"smith, john\" ,\"say \"\"hi\"\"\",\"\"\n");
  ASSERT_EQ(trace.jobs.size(), 1u) << (trace.problems.empty() ? "" : trace.problems[0].message);
  EXPECT_EQ(trace.jobs[0].user, "smith, john");
  EXPECT_EQ(trace.jobs[0].executable, "say \"hi\"");
  EXPECT_EQ(trace.jobs[0].queue, "");
}

TEST(CsvParse, MalformedLinesAreSkippedWithReasonsOrFatalWhenStrict) {
  constexpr std::string_view text =
      "submit,duration,tasks,cpu,user\n"  // 1
      "1,10,1,1,a\n"                      // 2: fine
      "1,10,1,1\n"                        // 3: fields
      "1,10,1,1,\"open\n"                 // 4: fields (quote not closed)
      "x,10,1,1,a\n"                      // 5: number
      ",10,1,1,a\n"                       // 6: submit
      "1,-3,1,1,a\n"                      // 7: run_time
      "1,10,0,1,a\n"                      // 8: tasks
      "1,10,1,lots,a\n"                   // 9: resources
      "1,10,1,-1,a\n";                    // 10: resources
  auto trace = parse_csv_ok(text);
  EXPECT_EQ(trace.jobs.size(), 1u);
  std::map<std::string, uint64_t> expected = {{"fields", 2},   {"number", 1}, {"submit", 1},
                                              {"run_time", 1}, {"tasks", 1},  {"resources", 2}};
  EXPECT_EQ(trace.skipped, expected);
  EXPECT_EQ(trace.data_lines, 9u);
  ASSERT_EQ(trace.problems.size(), 8u);
  EXPECT_EQ(trace.problems[0].message, "line 3: expected 5 fields, found 4");
  EXPECT_EQ(trace.problems[2].message, "line 5: column 'submit': 'x' is not a number");
  EXPECT_EQ(trace.problems[3].message, "line 6: column 'submit' is empty");
  EXPECT_EQ(trace.problems[4].message, "line 7: column 'duration' is negative (-3)");
  EXPECT_EQ(trace.problems[6].line, 9u);
  EXPECT_NE(trace.problems[6].message.find("column 'cpu'"), std::string::npos) << trace.problems[6].message;

  auto strict = parse_csv(text, TraceOptions{.strict = true});
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().message, "line 3: expected 5 fields, found 4");
}

TEST(TraceDetect, CsvByItsSubmitHeaderSwfOtherwise) {
  auto csv = parse_trace("\n  id,submit,duration\n1,2,3\n");
  ASSERT_TRUE(csv) << csv.error().to_string();
  ASSERT_EQ(csv->jobs.size(), 1u);
  EXPECT_EQ(csv->jobs[0].run_s, 3);

  auto swf = parse_trace("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
  ASSERT_TRUE(swf) << swf.error().to_string();
  EXPECT_EQ(swf->header.max_procs, 4u);
  EXPECT_EQ(swf->jobs.size(), 1u);

  auto headerless = parse_trace("1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
  ASSERT_TRUE(headerless);
  EXPECT_EQ(headerless->jobs.size(), 1u);

  // A CSV header with a typo is still read as CSV, so the error says what is wrong.
  auto typo = parse_trace("submit,duraton\n1,2\n");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("unknown column 'duraton'"), std::string::npos) << typo.error().message;
}

// --- files ------------------------------------------------------------------------

class TraceFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "claimsched-trace-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string write(const std::string& name, const std::string& bytes) {
    auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  /// `text` as one gzip member, in memory.
  static std::string gzip(const std::string& text) {
    z_stream stream{};
    EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&stream, text.size()), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    stream.avail_in = static_cast<uInt>(text.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    return out;
  }

  std::filesystem::path dir_;
};

const std::string kTwoJobs =
    "; MaxProcs: 8\n"
    "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
    "2 5 0 10 2 -1 -1 2 60 -1 1 1 1 -1 -1 -1 -1 -1\n";

TEST_F(TraceFile, ReadsPlainText) {
  auto text = apps::read_trace_text(write("plain.swf", kTwoJobs));
  ASSERT_TRUE(text) << text.error().to_string();
  EXPECT_EQ(*text, kTwoJobs);
}

TEST_F(TraceFile, ReadsAGzipFileWrittenByZlibWhateverItsName) {
  auto path = (dir_ / "trace.swf").string();  // no .gz: the magic bytes decide
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, kTwoJobs.data(), static_cast<unsigned>(kTwoJobs.size())), static_cast<int>(kTwoJobs.size()));
  ASSERT_EQ(gzclose(out), Z_OK);

  auto text = apps::read_trace_text(path);
  ASSERT_TRUE(text) << text.error().to_string();
  EXPECT_EQ(*text, kTwoJobs);
  auto trace = apps::load_trace(path, {});
  ASSERT_TRUE(trace) << trace.error().to_string();
  EXPECT_EQ(trace->jobs.size(), 2u);
  EXPECT_EQ(trace->header.max_procs, 8u);
}

TEST_F(TraceFile, ReadsConcatenatedGzipMembersAndLargeOutput) {
  std::string big;
  for (int i = 0; i < 20000; ++i)
    big += std::to_string(i + 3) + " " + std::to_string(i) + " 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n";
  auto text = apps::read_trace_text(write("two.gz", gzip(kTwoJobs) + gzip(big)));
  ASSERT_TRUE(text) << text.error().to_string();
  EXPECT_EQ(*text, kTwoJobs + big);
}

TEST_F(TraceFile, ATruncatedGzipIsAnErrorNamingTheFile) {
  std::string compressed = gzip(kTwoJobs + kTwoJobs);
  for (size_t keep : {size_t{2}, size_t{10}, compressed.size() / 2, compressed.size() - 1}) {
    auto path = write("cut.gz", compressed.substr(0, keep));
    auto text = apps::read_trace_text(path);
    ASSERT_FALSE(text) << "kept " << keep << " of " << compressed.size() << " bytes";
    EXPECT_EQ(text.error().code, Errc::corrupt);
    EXPECT_NE(text.error().message.find(path), std::string::npos) << text.error().message;
    EXPECT_NE(text.error().message.find("truncated"), std::string::npos) << text.error().message;
  }
}

TEST_F(TraceFile, ACorruptGzipIsAnError) {
  std::string compressed = gzip(kTwoJobs);
  std::string flipped = compressed;
  for (size_t i = 12; i < flipped.size() - 8; ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  auto broken = apps::read_trace_text(write("flipped.gz", flipped));
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, Errc::corrupt);
  EXPECT_NE(broken.error().message.find("flipped.gz"), std::string::npos) << broken.error().message;

  auto trailing = apps::read_trace_text(write("trailing.gz", compressed + "garbage"));
  ASSERT_FALSE(trailing) << "trailing bytes would be lost silently";
  EXPECT_NE(trailing.error().message.find("after the gzip stream"), std::string::npos) << trailing.error().message;
}

TEST_F(TraceFile, AMissingFileIsAnErrorNamingIt) {
  auto path = (dir_ / "absent.swf").string();
  auto text = apps::read_trace_text(path);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, Errc::io_error);
  EXPECT_EQ(text.error().message, "cannot read '" + path + "': No such file or directory");
  auto directory = apps::read_trace_text(dir_.string());
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("directory"), std::string::npos);
}

TEST_F(TraceFile, LoadTraceErrorsNameTheFileAndLine) {
  auto path = write("bad.swf", kTwoJobs + "3 0 0 ten 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
  auto strict = apps::load_trace(path, TraceOptions{.strict = true});
  ASSERT_FALSE(strict);
  EXPECT_EQ(strict.error().message, path + ": line 4: field 4 (run time): 'ten' is not a number");
  auto lenient = apps::load_trace(path, {});
  ASSERT_TRUE(lenient);
  EXPECT_EQ(lenient->skipped.at("number"), 1u);
}

// The shared KTH SP2 log (see /work/shared/traces/README.md), beside the repository.
TEST(TraceKth, TheRealTraceReadsEveryJob) {
  auto path = std::filesystem::path(__FILE__).parent_path() / "../../../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared trace at " << path;
  auto trace = apps::load_trace(path.string(), {});
  ASSERT_TRUE(trace) << trace.error().to_string();
  // 28,476 records (the header's MaxRecords); one of them, job 27313, gives
  // neither allocated nor requested processors and cannot be replayed.
  EXPECT_EQ(trace->data_lines, 28476u);
  EXPECT_EQ(trace->jobs.size() + total_skipped(*trace), trace->data_lines);
  EXPECT_EQ(trace->jobs.size(), 28475u);
  EXPECT_EQ(trace->skipped, (std::map<std::string, uint64_t>{{"processors", 1}}));
  ASSERT_EQ(trace->problems.size(), 1u);
  EXPECT_EQ(trace->problems[0].line, 27323u);
  EXPECT_EQ(trace->header.max_nodes, 100u);
  EXPECT_EQ(trace->header.max_procs, 100u);
  EXPECT_EQ(trace->header.unix_start_time, 843480031);
  uint32_t widest = 0;
  size_t with_limit = 0;
  for (const auto& job : trace->jobs) {
    widest = std::max(widest, job.tasks);
    with_limit += job.requested_time_s.has_value();
  }
  EXPECT_GE(widest, 1u);
  EXPECT_LE(widest, 100u) << "no job wider than the machine";
  EXPECT_EQ(with_limit, trace->jobs.size()) << "the README: every job has a requested time";
  EXPECT_TRUE(std::is_sorted(trace->jobs.begin(), trace->jobs.end(),
                             [](const TraceJob& a, const TraceJob& b) { return a.submit_s < b.submit_s; }));
  EXPECT_EQ(trace->jobs.front().number, 15u) << "the cleaned log starts at job 15";
  EXPECT_EQ(trace->jobs.front().submit_s, 599850);
  EXPECT_EQ(trace->jobs.front().wait_s, 192180);
}

}  // namespace
}  // namespace claimsched::core::replay::trace_test
