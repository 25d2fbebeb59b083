// The normalizer's caches: a hit returns what was inserted, a near miss is a miss.
#include "fr/normalize/intern_caches.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(ByteKeyInternerTest, FindsWhatWasInsertedByItsBytes) {
  ByteKeyInterner interner;
  std::string shape = "\x02\x03\x04";
  EXPECT_EQ(interner.Find(shape, ByteKeyInterner::Hash(shape)), ByteKeyInterner::kMissing);
  interner.Insert(shape, ByteKeyInterner::Hash(shape), 7);
  EXPECT_EQ(interner.Find(shape, ByteKeyInterner::Hash(shape)), 7u);
  // Same length, other bytes; a prefix; the empty key.
  EXPECT_EQ(interner.Find("\x02\x03\x05", ByteKeyInterner::Hash("\x02\x03\x05")),
            ByteKeyInterner::kMissing);
  EXPECT_EQ(interner.Find("\x02\x03", ByteKeyInterner::Hash("\x02\x03")),
            ByteKeyInterner::kMissing);
  EXPECT_EQ(interner.Find("", ByteKeyInterner::Hash("")), ByteKeyInterner::kMissing);
}

TEST(ByteKeyInternerTest, AHashCollisionKeepsBothKeys) {
  // Two keys given the same hash (as a real collision would): each still finds its own id.
  ByteKeyInterner interner;
  std::string a(40, 'a'), b(40, 'b');
  interner.Insert(a, 42, 1);
  interner.Insert(b, 42, 2);
  EXPECT_EQ(interner.Find(a, 42), 1u);
  EXPECT_EQ(interner.Find(b, 42), 2u);
  EXPECT_EQ(interner.Find(std::string(40, 'c'), 42), ByteKeyInterner::kMissing);
}

TEST(ByteKeyInternerTest, ManyKeysStayFindable) {
  // More keys than the table of recent hits holds.
  ByteKeyInterner interner;
  for (uint32_t i = 0; i < 1000; ++i) {
    std::string key = "key" + std::to_string(i);
    interner.Insert(key, ByteKeyInterner::Hash(key), i);
  }
  for (uint32_t i = 0; i < 1000; ++i) {
    std::string key = "key" + std::to_string(i);
    EXPECT_EQ(interner.Find(key, ByteKeyInterner::Hash(key)), i);
  }
}

TEST(ItemIdsCacheTest, ARepeatedListIsFoundByItsItems) {
  ItemIdsCache<8, 4> cache;
  std::vector<ValueId> frames = {3, 9, 12};
  EXPECT_EQ(cache.Find(frames), (ItemIdsCache<8, 4>::kMissing));
  cache.Insert(frames, 5);
  EXPECT_EQ(cache.Find(frames), 5u);
  std::vector<ValueId> other = {3, 10, 12};
  EXPECT_EQ(cache.Find(other), (ItemIdsCache<8, 4>::kMissing));
}

TEST(ItemIdsCacheTest, ListsLongerThanItsItemsAreNotCached) {
  ItemIdsCache<8, 2> cache;
  std::vector<ValueId> long_list = {1, 2, 3};
  cache.Insert(long_list, 5);
  EXPECT_EQ(cache.Find(long_list), (ItemIdsCache<8, 2>::kMissing));
}

TEST(ValueCacheTest, ANewDocumentForgetsTheLastOne) {
  ValueCache cache;
  cache.StartDocument(10);
  cache.At(4).string = 17;
  EXPECT_EQ(cache.At(4).string, 17u);
  cache.StartDocument(10);
  EXPECT_EQ(cache.At(4).string, kNoString);
  EXPECT_EQ(cache.At(4).field, 0xff);
}

}  // namespace
}  // namespace fr
