#include "fr/base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace fr {
namespace {

const std::string kReplacement = "\xef\xbf\xbd";

TEST(ValidUtf8Test, WellFormedTextIsUnchanged) {
  for (std::string text : {std::string(""), std::string("/dumps/rank_0"),
                           std::string("h\xc3\xa9te/\xe2\x82\xac/\xf0\x9f\x98\x80"),
                           std::string("\xed\x9f\xbf\xf4\x8f\xbf\xbf")}) {  // U+D7FF, U+10FFFF
    EXPECT_EQ(ValidUtf8(text), text);
  }
}

TEST(ValidUtf8Test, EachStrayByteBecomesOneReplacementCharacter) {
  EXPECT_EQ(ValidUtf8("rank_2\xff"), "rank_2" + kReplacement);
  EXPECT_EQ(ValidUtf8("\x80x"), kReplacement + "x");              // lone continuation
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), kReplacement + kReplacement);  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xe0\x80\xaf"), kReplacement + kReplacement + kReplacement);  // overlong
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), kReplacement + kReplacement + kReplacement);  // surrogate
  EXPECT_EQ(ValidUtf8("\xf4\x90\x80\x80"),  // above U+10FFFF
            kReplacement + kReplacement + kReplacement + kReplacement);
  EXPECT_EQ(ValidUtf8("\xe2\x82"), kReplacement + kReplacement);  // truncated at the end
  EXPECT_EQ(ValidUtf8("a\xe2\x82z"), "a" + kReplacement + kReplacement + "z");
}

}  // namespace
}  // namespace fr
