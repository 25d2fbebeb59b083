#include "fr/decode/document.h"

#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(DocumentBuilderTest, InterleavedBatchesKeepEachContainersOrder) {
  auto input = Buffer::FromString("abcdef");
  DocumentBuilder builder;
  builder.Reset(input);
  ValueId outer = builder.AddContainer(ValueKind::kList, 0);
  ValueId inner = builder.AddContainer(ValueKind::kList, 1);
  ValueId a = builder.AddInputString(0, 2, 2);  // "ab"
  ValueId b = builder.AddInt(-7, 3);
  ValueId c = builder.AddInputString(4, 2, 4);  // "ef"
  std::vector<ValueId> first = {a, inner};
  builder.Append(outer, first);
  std::vector<ValueId> inner_items = {b};
  builder.Append(inner, inner_items);
  std::vector<ValueId> second = {c};
  builder.Append(outer, second);
  Document doc = builder.Finish(outer);

  ASSERT_EQ(doc.size(outer), 3u);
  auto items = doc.items(outer);
  EXPECT_EQ(doc.string_value(items[0]), "ab");
  EXPECT_EQ(items[1], inner);
  EXPECT_EQ(doc.string_value(items[2]), "ef");
  ASSERT_EQ(doc.size(inner), 1u);
  EXPECT_EQ(doc.int_value(doc.items(inner)[0]), -7);
}

TEST(DocumentTest, FindReturnsTheLastValueOfARepeatedKey) {
  auto input = Buffer::FromString("kk");
  DocumentBuilder builder;
  builder.Reset(input);
  ValueId dict = builder.AddContainer(ValueKind::kDict, 0);
  ValueId key = builder.AddOwnedString("state", 0);
  ValueId first = builder.AddOwnedString("scheduled", 0);
  ValueId second = builder.AddOwnedString("completed", 0);
  std::vector<ValueId> pairs = {key, first, key, second};
  builder.Append(dict, pairs);
  Document doc = builder.Finish(dict);

  EXPECT_EQ(doc.size(dict), 2u);
  EXPECT_EQ(doc.string_value(doc.Find(dict, "state")), "completed");
  EXPECT_EQ(doc.Find(dict, "missing"), kNoValue);
  EXPECT_EQ(doc.Find(second, "state"), kNoValue);
}

TEST(DocumentTest, FloatsKeepEveryBit) {
  DocumentBuilder builder;
  builder.Reset(Buffer::FromString(""));
  ValueId f = builder.AddFloat(0.1 + 0.2, 0);
  Document doc = builder.Finish(f);
  EXPECT_EQ(doc.float_value(f), 0.1 + 0.2);
}

}  // namespace
}  // namespace fr
