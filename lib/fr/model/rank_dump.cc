#include "fr/model/rank_dump.h"

namespace fr {

std::string_view EntryStateName(EntryState state) {
  switch (state) {
    case EntryState::kScheduled:
      return "scheduled";
    case EntryState::kStarted:
      return "started";
    case EntryState::kCompleted:
      return "completed";
    case EntryState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

// Id 0 is also what an entry holds when its dump version recorded no such field (1.x dumps have
// no dtypes): that reads as an empty list even when the table is empty.
std::span<const int64_t> RankDump::ShapeList(ShapeListId id) const {
  if (static_cast<size_t>(id) + 1 >= shape_list_offsets.size()) return {};
  uint32_t begin = shape_list_offsets[id];
  uint32_t end = shape_list_offsets[id + 1];
  return {shape_dims.data() + begin, end - begin};
}

std::span<const StringId> RankDump::DtypeList(DtypeListId id) const {
  if (static_cast<size_t>(id) + 1 >= dtype_list_offsets.size()) return {};
  uint32_t begin = dtype_list_offsets[id];
  uint32_t end = dtype_list_offsets[id + 1];
  return {dtype_names.data() + begin, end - begin};
}

std::span<const uint32_t> RankDump::Stack(StackId id) const {
  if (static_cast<size_t>(id) + 1 >= stack_offsets.size()) return {};
  uint32_t begin = stack_offsets[id];
  uint32_t end = stack_offsets[id + 1];
  return {stack_frames.data() + begin, end - begin};
}

std::vector<std::vector<int64_t>> RankDump::Shapes(ShapeListId id) const {
  std::span<const int64_t> flat = ShapeList(id);
  std::vector<std::vector<int64_t>> shapes;
  if (flat.empty()) return shapes;
  size_t at = 1;
  for (int64_t i = 0; i < flat[0]; ++i) {
    int64_t rank = flat[at++];
    shapes.emplace_back(flat.begin() + at, flat.begin() + at + rank);
    at += rank;
  }
  return shapes;
}

int64_t RankDump::OddityCount(std::string_view name) const {
  for (const auto& [key, count] : oddities) {
    if (key == name) return count;
  }
  return 0;
}

}  // namespace fr
