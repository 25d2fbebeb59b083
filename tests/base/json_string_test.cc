#include "fr/base/json_string.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace fr {
namespace {

std::string Json(std::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

TEST(JsonStringTest, QuotesBackslashesAndControlCharactersAreEscaped) {
  EXPECT_EQ(Json("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(Json("\n\t\r\b\f"), R"("\n\t\r\b\f")");
  EXPECT_EQ(Json(std::string_view("\x01\0", 2)), R"("\u0001\u0000")");
}

TEST(JsonStringTest, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  // A frame name from a hostile or damaged dump: the document stays readable by every parser.
  EXPECT_EQ(Json("step\xff"), "\"step\xEF\xBF\xBD\"");
  EXPECT_EQ(Json("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
}

}  // namespace
}  // namespace fr
