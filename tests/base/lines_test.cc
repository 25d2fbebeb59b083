#include "fr/base/lines.h"

#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Read(std::string_view text) {
  std::vector<std::string> lines;
  for (std::string_view line : Lines(text)) lines.emplace_back(line);
  return lines;
}

TEST(LinesTest, ALastLineWithoutNewlineIsALineATrailingNewlineStartsNone) {
  EXPECT_THAT(Read("a\nb"), ElementsAre("a", "b"));
  EXPECT_THAT(Read("a\nb\n"), ElementsAre("a", "b"));
}

TEST(LinesTest, EmptyLinesAreKeptAndNothingIsNoLine) {
  EXPECT_THAT(Read("\n\nx\n\n"), ElementsAre("", "", "x", ""));
  EXPECT_THAT(Read(""), IsEmpty());
  EXPECT_THAT(Read("\n"), ElementsAre(""));
}

TEST(LinesTest, CarriageReturnsAndNulsStayInTheLine) {
  // Splitting is on '\n' alone: a CRLF file's lines end in '\r' for the reader to trim.
  EXPECT_THAT(Read(std::string_view("a\r\nb\0c", 6)), ElementsAre("a\r", std::string("b\0c", 3)));
}

}  // namespace
}  // namespace fr
