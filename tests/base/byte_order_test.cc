#include "fr/base/byte_order.h"

#include <bit>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(ByteOrderTest, LittleEndianWhateverTheHost) {
  const uint8_t bytes[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
  EXPECT_EQ(LoadLe16(bytes), 0x0201u);
  EXPECT_EQ(LoadLe32(bytes), 0x04030201u);
  EXPECT_EQ(LoadLe64(bytes), 0x0807060504030201u);
  // Unaligned.
  EXPECT_EQ(LoadLe32(bytes + 1), 0x05040302u);
}

TEST(ByteOrderTest, BigEndianDoubleAsPickleWritesIt) {
  // BINFLOAT 1.5: 3f f8 00 00 00 00 00 00.
  const uint8_t bytes[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::bit_cast<double>(LoadBe64(bytes)), 1.5);
}

}  // namespace
}  // namespace fr
