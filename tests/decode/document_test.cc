#include "fr/decode/document.h"

#include <thread>
#include <utility>
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

// A list of `n` ints 0..n-1 followed by a dict {"k": <the list>}, built through the builder.
Document BuildCounted(int n) {
  DocumentBuilder builder;
  builder.Reset(Buffer::FromString("k"));
  ValueId list = builder.AddContainer(ValueKind::kList, 0);
  std::vector<ValueId> items;
  for (int i = 0; i < n; ++i) items.push_back(builder.AddInt(i, static_cast<uint32_t>(i)));
  builder.Append(list, items);
  ValueId dict = builder.AddContainer(ValueKind::kDict, 0);
  std::vector<ValueId> pair = {builder.AddInputString(0, 1, 0), list};
  builder.Append(dict, pair);
  return builder.Finish(dict);
}

void ExpectCounted(const Document& doc, int n) {
  ValueId list = doc.Find(doc.root(), "k");
  ASSERT_NE(list, kNoValue);
  ASSERT_EQ(doc.size(list), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    ValueId item = doc.items(list)[i];
    ASSERT_EQ(doc.kind(item), ValueKind::kInt);
    ASSERT_EQ(doc.int_value(item), i);
    ASSERT_EQ(doc.source_offset(item), static_cast<uint64_t>(i));
  }
}

TEST(DocumentTest, StorageRecycledFromDroppedDocumentsHoldsOnlyTheNewValues) {
  // Each document is dropped before the next is built, so the next starts from the recycled
  // (larger, then smaller) arrays of the previous one.
  for (int n : {1000, 10, 5000, 0, 3}) {
    Document doc = BuildCounted(n);
    ExpectCounted(doc, n);
    EXPECT_EQ(doc.value_count(), static_cast<size_t>(n) + 3);
  }
  // Documents alive at the same time never share storage.
  Document a = BuildCounted(100);
  Document b = BuildCounted(200);
  ExpectCounted(a, 100);
  ExpectCounted(b, 200);
}

TEST(DocumentTest, MoveAssignmentReplacesTheOldContent) {
  Document a = BuildCounted(50);
  Document b = BuildCounted(70);
  a = std::move(b);
  ExpectCounted(a, 70);
  a = Document();
  EXPECT_EQ(a.root(), kNoValue);
  EXPECT_EQ(a.value_count(), 0u);
}

TEST(DocumentTest, DocumentsMayBeDroppedOnAnotherThread) {
  // The loader decodes on worker threads; documents may die anywhere, including on a thread that
  // exits right after (its pool is freed with it).
  std::vector<Document> docs;
  for (int i = 0; i < 4; ++i) docs.push_back(BuildCounted(100 * (i + 1)));
  std::thread worker([&docs] {
    ExpectCounted(docs[0], 100);
    docs.clear();
    Document local = BuildCounted(7);
    ExpectCounted(local, 7);
  });
  worker.join();
  ExpectCounted(BuildCounted(300), 300);
}

TEST(DocumentBuilderTest, ManyInterleavedContainersAndEmptyOnes) {
  DocumentBuilder builder;
  builder.Reset(Buffer::FromString(""));
  std::vector<ValueId> lists;
  for (int i = 0; i < 3; ++i) lists.push_back(builder.AddContainer(ValueKind::kList, 0));
  ValueId empty = builder.AddContainer(ValueKind::kDict, 0);
  // Round robin: every batch after the first round goes to a non-adjacent chunk.
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 3; ++i) {
      std::vector<ValueId> batch = {builder.AddInt(i * 100 + round, 0)};
      if (round == 2) batch.push_back(builder.AddInt(i * 100 + 50, 0));
      builder.Append(lists[i], batch);
    }
  }
  builder.Append(empty, {});
  ValueId outer = builder.AddContainer(ValueKind::kList, 0);
  std::vector<ValueId> all = lists;
  all.push_back(empty);
  builder.Append(outer, all);
  Document doc = builder.Finish(outer);

  for (int i = 0; i < 3; ++i) {
    std::vector<int64_t> got;
    for (ValueId item : doc.items(lists[i])) got.push_back(doc.int_value(item));
    std::vector<int64_t> want = {i * 100, i * 100 + 1, i * 100 + 2, i * 100 + 50, i * 100 + 3};
    EXPECT_EQ(got, want) << "list " << i;
  }
  EXPECT_EQ(doc.kind(empty), ValueKind::kDict);
  EXPECT_EQ(doc.size(empty), 0u);
  EXPECT_EQ(doc.items(empty).size(), 0u);
  EXPECT_EQ(doc.size(outer), 4u);
}

TEST(DocumentBuilderTest, DecoderFlagsLeaveKindsAlone) {
  DocumentBuilder builder;
  builder.Reset(Buffer::FromString(""));
  ValueId dict = builder.AddContainer(ValueKind::kDict, 0, /*flags=*/5);
  ValueId number = builder.AddInt(-1, 0);
  EXPECT_EQ(builder.flags(dict), 5u);
  EXPECT_EQ(builder.flags(number), 0u);
  uint32_t all_flags = (uint32_t{1} << DocumentBuilder::kFlagBits) - 1;
  builder.set_flags(number, all_flags);
  EXPECT_EQ(builder.flags(number), all_flags);
  EXPECT_EQ(builder.kind(number), ValueKind::kInt);
  EXPECT_EQ(builder.kind(dict), ValueKind::kDict);
  Document doc = builder.Finish(number);
  EXPECT_EQ(doc.kind(number), ValueKind::kInt);
  EXPECT_EQ(doc.int_value(number), -1);
}

}  // namespace
}  // namespace fr
