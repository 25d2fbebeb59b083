#include "fr/model/string_table.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(StringTableTest, CompactKeepsEveryIdAndItsText) {
  StringTable strings;
  std::vector<std::string> texts;
  std::vector<StringId> ids;
  // Enough text to span several blocks, and one string longer than any block.
  for (int i = 0; i < 3000; ++i) texts.push_back("frame_" + std::to_string(i) + "_of_a_stack");
  texts.push_back(std::string(100'000, 'x'));
  for (const std::string& text : texts) ids.push_back(strings.Intern(text));
  size_t before = strings.MemoryBytes();
  strings.Compact();
  EXPECT_LT(strings.MemoryBytes(), before);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(strings.view(ids[i]), texts[i]);
  EXPECT_EQ(strings.view(0), "");
  // Lookups and new strings still work, and existing strings keep their ids.
  EXPECT_EQ(strings.Find("frame_17_of_a_stack"), ids[17]);
  EXPECT_EQ(strings.Intern("frame_17_of_a_stack"), ids[17]);
  StringId added = strings.Intern("a string interned after compacting");
  EXPECT_EQ(added, ids.back() + 1);
  EXPECT_EQ(strings.view(added), "a string interned after compacting");
  EXPECT_EQ(strings.view(ids[5]), texts[5]);
  EXPECT_EQ(strings.Find("never interned"), kNoString);
}

TEST(StringTableTest, CompactOfAnEmptyTableKeepsTheEmptyString) {
  StringTable strings;
  strings.Compact();
  EXPECT_EQ(strings.size(), 1u);
  EXPECT_EQ(strings.view(0), "");
  EXPECT_EQ(strings.Intern(""), 0u);
  StringId id = strings.Intern("nccl");
  strings.Compact();
  StringTable moved = std::move(strings);
  EXPECT_EQ(moved.view(id), "nccl");
  EXPECT_EQ(moved.Find("nccl"), id);
}

}  // namespace
}  // namespace fr
