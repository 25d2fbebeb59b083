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

TEST(TerminalSafeTest, ControlsAndBidiOverridesBecomeVisibleEscapes) {
  EXPECT_EQ(TerminalSafe("forward (/x/model.py:12)"), "forward (/x/model.py:12)");
  EXPECT_EQ(TerminalSafe("h\xc3\xa9te"), "h\xc3\xa9te");                   // printable UTF-8 kept
  EXPECT_EQ(TerminalSafe("\x1b[2J"), "\\x1b[2J");                          // clear screen
  EXPECT_EQ(TerminalSafe("a\nfr-analyze: none"), "a\\nfr-analyze: none");  // a fake line
  EXPECT_EQ(TerminalSafe("a\rb\tc\x7f"), "a\\rb\\tc\\x7f");
  EXPECT_EQ(TerminalSafe("\xc2\x9b"
                         "31m"),
            "\\u009b31m");  // C1 CSI
  EXPECT_EQ(TerminalSafe("ab\xe2\x80\xae"
                         "cd"),
            "ab\\u202ecd");                              // right-to-left override
  EXPECT_EQ(TerminalSafe("\xe2\x81\xa6x"), "\\u2066x");  // left-to-right isolate
  EXPECT_EQ(TerminalSafe("\xff"), kReplacement);         // invalid UTF-8 as in ValidUtf8
}

}  // namespace
}  // namespace fr
