#include "fr/write/pickle_writer.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace fr {
namespace {

constexpr uint32_t kNoMemo = UINT32_MAX;
// Deeper nesting than any decoder accepts (256); guards the recursion for hand-built documents.
constexpr int kMaxDepth = 4096;

bool IsContainer(ValueKind kind) {
  return kind == ValueKind::kList || kind == ValueKind::kTuple || kind == ValueKind::kDict;
}

class TorchPickler {
 public:
  TorchPickler(const Document& doc, std::string& out) : doc_(doc), out_(out) {}

  void Write(std::span<const ValueId> held) {
    ValueId root = doc_.root();
    CountReferences(root, held);
    out_.push_back('\x80');
    out_.push_back('\x02');
    if (root == kNoValue) {
      out_.push_back('N');
    } else {
      Push(root, 0);
    }
    out_.push_back('.');
  }

 private:
  // Refcounts as C++ would see them while pickling: one per holding container reachable from the
  // root, one for the call's own argument (the root), one per `held` local.
  void CountReferences(ValueId root, std::span<const ValueId> held) {
    size_t n = doc_.value_count();
    refs_.assign(n, 0);
    memo_.assign(n, kNoMemo);
    on_path_.assign(n, false);
    if (root == kNoValue) return;
    std::vector<bool> seen(n, false);
    std::vector<ValueId> stack = {root};
    seen[root] = true;
    refs_[root] = 1;
    while (!stack.empty()) {
      ValueId id = stack.back();
      stack.pop_back();
      if (!IsContainer(doc_.kind(id))) continue;
      for (ValueId child : doc_.items(id)) {
        if (refs_[child] < 2) ++refs_[child];  // only "more than one" matters
        if (!seen[child]) {
          seen[child] = true;
          stack.push_back(child);
        }
      }
    }
    for (ValueId id : held) {
      if (id < n && refs_[id] < 2) ++refs_[id];
    }
  }

  void Op(char op) { out_.push_back(op); }

  template <typename T>
  void Little(T value) {
    static_assert(std::endian::native == std::endian::little);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }

  uint32_t NextBinPut() {
    uint32_t id = next_memo_++;
    if (id <= 0xff) {
      Op('q');
      out_.push_back(static_cast<char>(id));
    } else {
      Op('r');
      Little<uint32_t>(id);
    }
    return id;
  }

  void BinGet(uint32_t id) {
    if (id <= 0xff) {
      Op('h');
      out_.push_back(static_cast<char>(id));
    } else {
      Op('j');
      Little<uint32_t>(id);
    }
  }

  void PushInt(int64_t n) {
    if (n >= 0 && n <= 0xff) {
      Op('K');
      out_.push_back(static_cast<char>(n));
    } else if (n >= 0 && n <= 0xffff) {
      Op('M');
      Little<uint16_t>(static_cast<uint16_t>(n));
    } else if (n >= INT32_MIN && n <= INT32_MAX) {
      Op('J');
      Little<int32_t>(static_cast<int32_t>(n));
    } else {
      Op('\x8a');
      out_.push_back('\x08');
      Little<int64_t>(n);
    }
  }

  void PushFloat(double value) {
    Op('G');
    uint64_t bits = std::bit_cast<uint64_t>(value);
    for (int shift = 56; shift >= 0; shift -= 8) {
      out_.push_back(static_cast<char>((bits >> shift) & 0xff));
    }
  }

  void PushString(std::string_view s) {
    auto [it, inserted] = strings_.try_emplace(s, kNoMemo);
    if (!inserted) {
      BinGet(it->second);
      return;
    }
    Op('X');
    Little<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
    it->second = NextBinPut();
  }

  void PushContainer(ValueId id, int depth) {
    std::span<const ValueId> items = doc_.items(id);
    switch (doc_.kind(id)) {
      case ValueKind::kList:
        Op(']');
        Op('(');
        for (ValueId item : items) Push(item, depth + 1);
        Op('e');
        break;
      case ValueKind::kDict:
        Op('}');
        Op('(');
        for (ValueId item : items) Push(item, depth + 1);
        Op('u');
        break;
      default:  // kTuple
        if (items.size() > 3) Op('(');
        for (ValueId item : items) Push(item, depth + 1);
        static constexpr char kTupleOps[] = {')', '\x85', '\x86', '\x87'};
        Op(items.size() <= 3 ? kTupleOps[items.size()] : 't');
        break;
    }
  }

  void Push(ValueId id, int depth) {
    switch (doc_.kind(id)) {
      case ValueKind::kNone:
        Op('N');
        return;
      case ValueKind::kBool:
        Op(doc_.bool_value(id) ? '\x88' : '\x89');
        return;
      case ValueKind::kInt:
        PushInt(doc_.int_value(id));
        return;
      case ValueKind::kFloat:
        PushFloat(doc_.float_value(id));
        return;
      case ValueKind::kString:
        PushString(doc_.string_value(id));
        return;
      default:
        break;
    }
    if (on_path_[id] || depth > kMaxDepth) {
      Op('N');
      return;
    }
    bool memoize = refs_[id] > 1;
    if (memoize && memo_[id] != kNoMemo) {
      BinGet(memo_[id]);
      return;
    }
    on_path_[id] = true;
    PushContainer(id, depth);
    on_path_[id] = false;
    if (memoize) memo_[id] = NextBinPut();
  }

  const Document& doc_;
  std::string& out_;
  std::vector<uint8_t> refs_;
  std::vector<uint32_t> memo_;
  std::vector<bool> on_path_;
  absl::flat_hash_map<std::string_view, uint32_t> strings_;
  uint32_t next_memo_ = 0;
};

}  // namespace

void AppendPickle(const Document& document, std::span<const ValueId> held, std::string& out) {
  // A dump's pickle is close to its value count times a few bytes plus its string bytes.
  out.reserve(out.size() + document.value_count() * 6 + 64);
  TorchPickler(document, out).Write(held);
}

std::string PickleDocument(const Document& document, std::span<const ValueId> held) {
  std::string out;
  AppendPickle(document, held, out);
  return out;
}

}  // namespace fr
