// The stacks of a dump as the direct reader reads them: frames lists, the frame dicts torch
// writes once and names again by memo, and the frame and stack tables they are interned into, in
// the order the normalizer interns them (FindStack, InternStackContent).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/string_view.h"
#include "fr/normalize/direct_pickle_reader_internal.h"

namespace fr::direct_pickle_internal {

// [frame...], each frame a dict written once (and memoized when shared) or a memo get of one.
bool Reader::ReadNewFrames() {
  const uint8_t* start = p_;
  if (!Expect2(']', '(', "frames are not a list")) return false;
  bool all_gets = true;
  while (!At('e')) {
    if (At('}')) {
      if (!ReadFrameDict()) return false;
      all_gets = false;
      continue;
    }
    uint32_t id = MemoGet();
    if (id == kNone) return false;
    if (memo_[id].kind != SlotKind::kFrame) return Decline("frame is not a frame dict");
    raw_.frames.push_back(memo_[id].offset);
    raw_.frames_hash = (raw_.frames_hash ^ memo_[id].offset) * 0x9e3779b97f4a7c15ull;
  }
  ++p_;
  raw_.frames_offset = static_cast<uint32_t>(start - begin_);
  raw_.frames_length = static_cast<uint32_t>(p_ - start);
  raw_.frames_all_gets = all_gets;
  return true;
}

bool Reader::ReadFrameDict() {
  if (!Expect2('}', '(', "frame is not a dict")) return false;
  FrameIdentity frame;
  bool has_line = false;
  while (!At('u')) {
    uint32_t key;
    if (!ReadString(&key)) return false;
    std::string_view text = Text(key);
    if (text == "line") {
      if (has_line) return Decline("repeated frame key");
      has_line = true;
      if (!ReadInt(&frame.line)) return false;
    } else if (text == "name" || text == "filename") {
      uint32_t& target = text == "name" ? frame.name_slot : frame.filename_slot;
      if (target != kNone) return Decline("repeated frame key");
      if (!ReadString(&target)) return false;
      if (text == "filename" && frame.name_slot == kNone) frame.filename_first = true;
    } else {
      return Decline("unknown frame key");
    }
  }
  ++p_;
  uint32_t identity = static_cast<uint32_t>(identities_.size());
  identities_.push_back(frame);
  raw_.frames.push_back(identity);
  raw_.frames_hash = (raw_.frames_hash ^ identity) * 0x9e3779b97f4a7c15ull;
  if (At('q') || At('r')) return MemoPut(SlotKind::kFrame, identity, 0);
  return true;
}

// The normalizer's FindStack: a stack whose frame dicts (by identity) were seen in that order.
StackId Reader::FindStack() {
  Visit(raw_.frames.size());
  absl::string_view key(reinterpret_cast<const char*>(raw_.frames.data()),
                        raw_.frames.size() * sizeof(uint32_t));
  auto it = stacks_by_identities_.find(key);
  return it == stacks_by_identities_.end() ? kNoStack : it->second;
}

uint32_t Reader::ResolveFrame(uint32_t identity) {
  FrameIdentity& f = identities_[identity];
  if (f.frame != kNone) return f.frame;
  Visit(6);
  Frame parsed;
  parsed.line = f.line;
  if (f.filename_first) {
    parsed.filename = Intern(f.filename_slot);
    if (f.name_slot != kNone) parsed.name = Intern(f.name_slot);
  } else {
    if (f.name_slot != kNone) parsed.name = Intern(f.name_slot);
    if (f.filename_slot != kNone) parsed.filename = Intern(f.filename_slot);
  }
  std::pair<uint64_t, int64_t> content{(uint64_t{parsed.name} << 32) | parsed.filename,
                                       parsed.line};
  auto [it, inserted] =
      frames_by_content_.try_emplace(content, static_cast<uint32_t>(dump_.frames.size()));
  if (inserted) {
    Keep(sizeof(Frame));
    dump_.frames.push_back(parsed);
  }
  f.frame = it->second;
  return f.frame;
}

// The normalizer's InternStackContent.
StackId Reader::InternStack() {
  dump_.has_stacks = true;
  Visit(raw_.frames.size());
  absl::string_view identity_key(reinterpret_cast<const char*>(raw_.frames.data()),
                                 raw_.frames.size() * sizeof(uint32_t));
  if (auto it = stacks_by_identities_.find(identity_key); it != stacks_by_identities_.end()) {
    return it->second;
  }
  ids_.clear();
  for (uint32_t identity : raw_.frames) ids_.push_back(ResolveFrame(identity));
  absl::string_view key(reinterpret_cast<const char*>(ids_.data()), ids_.size() * sizeof(uint32_t));
  StackId id;
  if (auto it = stacks_by_frames_.find(key); it != stacks_by_frames_.end()) {
    id = it->second;
  } else {
    Keep((ids_.size() + 1) * sizeof(uint32_t));
    id = static_cast<StackId>(dump_.stack_offsets.size() - 1);
    dump_.stack_frames.insert(dump_.stack_frames.end(), ids_.begin(), ids_.end());
    dump_.stack_offsets.push_back(static_cast<uint32_t>(dump_.stack_frames.size()));
    stacks_by_frames_.emplace(std::string(key), id);
  }
  stacks_by_identities_.emplace(std::string(identity_key), id);
  return id;
}
}  // namespace fr::direct_pickle_internal
