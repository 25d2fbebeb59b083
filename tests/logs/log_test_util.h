// What the log stage's tests share: parsing a text, or a real log of tests/data/logs/real (each
// with its public source in its first line), and the kinds of the events that came of it.
//
//   LogSet logs = log_test::ParseReal("xid.log");
//   EXPECT_THAT(log_test::Kinds(logs), ElementsAre("xid"));
#ifndef FR_TESTS_LOGS_LOG_TEST_UTIL_H_
#define FR_TESTS_LOGS_LOG_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr::log_test {

// `text` parsed as the log at `path` (the path can name a local rank: ".../attempt_0/3/...").
inline LogSet Parse(std::string_view text, std::string_view path = "test.log") {
  LogSet logs;
  EXPECT_TRUE(ParseLogText(path, text, &logs).ok());
  return logs;
}

inline std::string DataDir() { return std::string(FR_TEST_DATA_DIR) + "/"; }
inline std::string RealDir() { return DataDir() + "logs/real/"; }

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// tests/data/logs/real/`name`, read as fr-analyze reads a file.
inline LogSet ParseReal(const std::string& name) {
  absl::StatusOr<LogSet> logs = ParseLogFiles({RealDir() + name});
  EXPECT_TRUE(logs.ok());
  EXPECT_THAT(logs->errors, ::testing::IsEmpty());
  return *std::move(logs);
}

// The log of tests/data/world/`name` (a failure log pasted in a public issue; its source and
// truth in truth.json beside it), read as fr-analyze reads a file.
inline LogSet ParseWorld(const std::string& name) {
  absl::StatusOr<LogSet> logs = ParseLogFiles({DataDir() + "world/" + name + "/log.txt"});
  EXPECT_TRUE(logs.ok());
  return *std::move(logs);
}

inline std::vector<std::string> Kinds(const LogSet& logs) {
  std::vector<std::string> kinds;
  for (const LogEvent& e : logs.events) kinds.push_back(LogEventKindName(e.kind));
  return kinds;
}

}  // namespace fr::log_test

#endif  // FR_TESTS_LOGS_LOG_TEST_UTIL_H_
