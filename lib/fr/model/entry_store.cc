#include "fr/model/entry_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace fr {
namespace {

static_assert(std::bit_cast<uint64_t>(std::numeric_limits<double>::quiet_NaN()) ==
              0x7ff8'0000'0000'0000);
static_assert((static_cast<uint64_t>(kUnknown) ^ (uint64_t{1} << 63)) == 0x7fff'ffff'ffff'ffff);
static_assert(kNoStack == 0xffff'ffff && kNoString == 0xffff'ffff);

// Bytes that hold every value from 0 to `span`.
int BytesFor(uint64_t span) { return span == 0 ? 0 : (std::bit_width(span) + 7) / 8; }

}  // namespace

EntryStore::Row EntryStore::ColumnsOf(const Entry& e, size_t i) {
  Row row;
  // Modulo 2^64, as the reader adds it back: lossless for any record id.
  row[kRecordId] = FromSigned(e.record_id) - i;
  row[kPgId] = FromSigned(e.pg_id);
  row[kCollectiveSeqId] = FromSigned(e.collective_seq_id);
  row[kP2pSeqId] = FromSigned(e.p2p_seq_id);
  row[kOpId] = FromSigned(e.op_id);
  row[kTimeCreated] = FromSigned(e.time_created_ns);
  row[kTimeStarted] = FromSigned(e.time_discovered_started_ns);
  row[kTimeCompleted] = FromSigned(e.time_discovered_completed_ns);
  row[kTimeoutMs] = FromSigned(e.timeout_ms);
  row[kDurationMs] = std::bit_cast<uint64_t>(e.duration_ms);
  row[kPeerRank] = FromSigned(e.peer_rank);
  row[kGroup] = e.group;
  row[kProfilingName] = e.profiling_name;
  row[kBackend] = e.backend;
  row[kOpName] = e.op_name;
  row[kThreadName] = e.thread_name;
  row[kThreadId] = e.thread_id;
  row[kInputSizes] = e.input_sizes;
  row[kOutputSizes] = e.output_sizes;
  row[kInputDtypes] = e.input_dtypes;
  row[kOutputDtypes] = e.output_dtypes;
  row[kStack] = e.stack;
  const uint64_t op = static_cast<uint8_t>(e.op);
  const uint64_t state = static_cast<uint8_t>(e.state);
  row[kFlags] = uint64_t{e.retired} | uint64_t{e.is_p2p} << 1 | uint64_t{e.state_from_batch} << 2 |
                (state & 0x3) << 3 | (op & 0x1f) << 5 | (state & 0xfc) << 14 | (op & 0xe0) << 17;
  return row;
}

EntryStore::Vector& EntryStore::Open() {
  if (packed_) {
    // A programming error, not bad input: nothing may edit a dump after the loader kept it.
    std::fputs("fr::EntryStore: building on a packed store\n", stderr);
    std::abort();
  }
  return open_;
}

void EntryStore::clear() {
  Vector().swap(open_);
  packed_ = false;
  packed_size_ = 0;
  row_bytes_ = 0;
  width_ = {};
  position_ = {};
  zero_is_special_ = {};
  base_ = {};
  mask_ = {};
  rows_.reset();
}

void EntryStore::Pack() {
  if (packed_) return;
  const size_t count = open_.size();
  // Per column: the range of all values, and of the values other than its special one.
  Row low, high, low_plain, high_plain;
  low.fill(std::numeric_limits<uint64_t>::max());
  high.fill(0);
  low_plain = low;
  high_plain = high;
  Row special;
  for (int c = 0; c < kColumnCount; ++c) special[c] = SpecialOf(c);
  std::array<bool, kColumnCount> has_special{};
  for (size_t i = 0; i < count; ++i) {
    const Row row = ColumnsOf(open_[i], i);
    for (int c = 0; c < kColumnCount; ++c) {
      low[c] = std::min(low[c], row[c]);
      high[c] = std::max(high[c], row[c]);
      if (row[c] == special[c]) {
        has_special[c] = true;
      } else {
        low_plain[c] = std::min(low_plain[c], row[c]);
        high_plain[c] = std::max(high_plain[c], row[c]);
      }
    }
  }
  uint32_t row_bytes = 0;
  for (int c = 0; c < kColumnCount; ++c) {
    zero_is_special_[c] = false;
    if (count == 0 || low[c] == high[c]) {
      width_[c] = 0;
      base_[c] = count == 0 ? 0 : low[c];
    } else {
      const int plain_bytes = BytesFor(high[c] - low[c]);
      const bool some_plain = low_plain[c] <= high_plain[c];
      const uint64_t plain_span = high_plain[c] - low_plain[c];
      // Offset 0 is the special value, so the ordinary ones need one more code.
      if (has_special[c] && some_plain && plain_span != std::numeric_limits<uint64_t>::max() &&
          BytesFor(plain_span + 1) < plain_bytes) {
        zero_is_special_[c] = true;
        width_[c] = static_cast<uint8_t>(BytesFor(plain_span + 1));
        base_[c] = low_plain[c];
      } else {
        width_[c] = static_cast<uint8_t>(plain_bytes);
        base_[c] = low[c];
      }
    }
    position_[c] = static_cast<uint8_t>(row_bytes);
    row_bytes += width_[c];
    mask_[c] = width_[c] == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width_[c])) - 1;
  }
  row_bytes_ = row_bytes;
  const size_t bytes = count * row_bytes + sizeof(uint64_t);
  rows_ = std::make_unique_for_overwrite<uint8_t[]>(bytes);
  std::memset(rows_.get() + count * row_bytes, 0, sizeof(uint64_t));
  uint8_t* out = rows_.get();
  for (size_t i = 0; i < count; ++i) {
    const Row row = ColumnsOf(open_[i], i);
    for (int c = 0; c < kColumnCount; ++c) {
      if (width_[c] == 0) continue;
      uint64_t offset = row[c] - base_[c];
      if (zero_is_special_[c]) offset = row[c] == special[c] ? 0 : offset + 1;
      // Little-endian: the low `width` bytes of the offset are the field.
      std::memcpy(out + position_[c], &offset, width_[c]);
    }
    out += row_bytes;
  }
  // Readers add the offset to the base directly (Value()).
  for (int c = 0; c < kColumnCount; ++c) {
    if (zero_is_special_[c]) base_[c] -= 1;
  }
  packed_size_ = count;
  packed_ = true;
  Vector().swap(open_);
}

size_t EntryStore::MemoryBytes() const {
  if (packed_) return packed_size_ * row_bytes_ + sizeof(uint64_t);
  return open_.capacity() * sizeof(Entry);
}

}  // namespace fr
