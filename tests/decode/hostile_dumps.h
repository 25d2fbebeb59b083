// Hostile dumps for the tests of the per-file budgets: small pickles whose shared references (a
// container written once and then named by 2-byte memo hits, as PyTorch writes shared frame dicts)
// would expand to gigabytes or minutes of work if every reference were expanded. Each is built as
// a DAG with DocumentBuilder and written by the torch-exact pickle writer, which memoizes exactly
// the containers that have several parents; flat hostile lists are written byte by byte.
//
//   std::string bytes = hostile::PgConfigSharingOneRankList(/*groups=*/9000, /*ranks=*/3000);
#ifndef FR_TESTS_DECODE_HOSTILE_DUMPS_H_
#define FR_TESTS_DECODE_HOSTILE_DUMPS_H_

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/base/buffer.h"
#include "fr/decode/document.h"
#include "fr/decode/pickle_opcodes.h"
#include "fr/write/pickle_writer.h"

namespace fr::hostile {

// A document under construction; strings are owned by the document.
class Dag {
 public:
  Dag() { builder_.Reset(Buffer::FromString("")); }

  ValueId Str(std::string_view text) { return builder_.AddOwnedString(text, 0); }
  ValueId Int(int64_t value) { return builder_.AddInt(value, 0); }
  ValueId List(const std::vector<ValueId>& items) {
    ValueId list = builder_.AddContainer(ValueKind::kList, 0);
    builder_.Append(list, items);
    return list;
  }
  // `pairs` alternates keys and values.
  ValueId Dict(const std::vector<ValueId>& pairs) {
    ValueId dict = builder_.AddContainer(ValueKind::kDict, 0);
    builder_.Append(dict, pairs);
    return dict;
  }
  // The torch-exact pickle of the document rooted at `root`.
  std::string Pickle(ValueId root) { return PickleDocument(builder_.Finish(root)); }

 private:
  DocumentBuilder builder_;
};

// {"version": "2.10", "pg_config": {"<g>": {"name": "<g>", "desc": "d", "ranks": R}},
//  "entries": []} where every group lists the same rank list R = [0, 1, ..., ranks - 1]: about 20
// bytes per group, `ranks` ranks each.
inline std::string PgConfigSharingOneRankList(int groups, int ranks) {
  Dag dag;
  std::vector<ValueId> rank_values;
  for (int r = 0; r < ranks; ++r) rank_values.push_back(dag.Int(r));
  ValueId shared = dag.List(rank_values);
  std::vector<ValueId> config;
  for (int g = 0; g < groups; ++g) {
    std::string name = std::to_string(g);
    config.push_back(dag.Str(name));
    config.push_back(dag.Dict(
        {dag.Str("name"), dag.Str(name), dag.Str("desc"), dag.Str("d"), dag.Str("ranks"), shared}));
  }
  return dag.Pickle(dag.Dict({dag.Str("version"), dag.Str("2.10"), dag.Str("pg_config"),
                              dag.Dict(config), dag.Str("entries"), dag.List({})}));
}

// The same with the ranks as PyTorch writes them, one string "[0, 1, ...]", which the pickle
// memoizes by value: every group after the first names it with a memo hit.
inline std::string PgConfigSharingOneRanksString(int groups, int ranks) {
  Dag dag;
  std::string text = "[";
  for (int r = 0; r < ranks; ++r) text += fmt::format("{}{}", r == 0 ? "" : ", ", r);
  text += "]";
  std::vector<ValueId> config;
  for (int g = 0; g < groups; ++g) {
    std::string name = std::to_string(g);
    config.push_back(dag.Str(name));
    config.push_back(dag.Dict({dag.Str("name"), dag.Str(name), dag.Str("desc"), dag.Str("d"),
                               dag.Str("ranks"), dag.Str(text)}));
  }
  return dag.Pickle(dag.Dict({dag.Str("version"), dag.Str("2.10"), dag.Str("pg_config"),
                              dag.Dict(config), dag.Str("entries"), dag.List({})}));
}

// `entries` distinct entry dicts whose input_sizes is one shared list of `shapes` references to
// one shared shape of `dims` dims: each entry names `shapes` x `dims` ints with one memo hit.
inline std::string EntriesSharingOneShapeList(int entries, int shapes, int dims) {
  Dag dag;
  std::vector<ValueId> dim_values;
  for (int d = 0; d < dims; ++d) dim_values.push_back(dag.Int(7));
  ValueId shape = dag.List(dim_values);
  ValueId shape_list = dag.List(std::vector<ValueId>(shapes, shape));
  std::vector<ValueId> entry_values;
  for (int e = 0; e < entries; ++e) {
    entry_values.push_back(
        dag.Dict({dag.Str("profiling_name"), dag.Str("nccl:all_reduce"),
                  dag.Str("collective_seq_id"), dag.Int(e), dag.Str("input_sizes"), shape_list}));
  }
  return dag.Pickle(
      dag.Dict({dag.Str("version"), dag.Str("2.10"), dag.Str("entries"), dag.List(entry_values)}));
}

// `entries` distinct entry dicts, each with its own input_sizes list of `shapes` references to
// one shared shape of `dims` dims: no list repeats as a value, the work does.
inline std::string EntriesRepeatingOneShape(int entries, int shapes, int dims) {
  Dag dag;
  std::vector<ValueId> dim_values;
  for (int d = 0; d < dims; ++d) dim_values.push_back(dag.Int(7));
  ValueId shape = dag.List(dim_values);
  std::vector<ValueId> entry_values;
  for (int e = 0; e < entries; ++e) {
    entry_values.push_back(
        dag.Dict({dag.Str("profiling_name"), dag.Str("nccl:all_reduce"), dag.Str("input_sizes"),
                  dag.List(std::vector<ValueId>(shapes, shape))}));
  }
  return dag.Pickle(
      dag.Dict({dag.Str("version"), dag.Str("2.10"), dag.Str("entries"), dag.List(entry_values)}));
}

// {"version": "2.10", "entries": [E, E, ...]}: `entries` memo hits on one entry dict.
inline std::string EntriesOfOneSharedDict(int entries) {
  Dag dag;
  ValueId entry = dag.Dict({dag.Str("profiling_name"), dag.Str("nccl:all_reduce")});
  return dag.Pickle(dag.Dict({dag.Str("version"), dag.Str("2.10"), dag.Str("entries"),
                              dag.List(std::vector<ValueId>(entries, entry))}));
}

// [[[...[0]...]]] where each list holds the previous one twice: `depth` levels print 2^depth
// zeros.
inline std::string DoublingLists(int depth) {
  Dag dag;
  ValueId list = dag.List({dag.Int(0)});
  for (int d = 0; d < depth; ++d) list = dag.List({list, list});
  return dag.Pickle(list);
}

// A protocol-2 pickle of a list of `count` Nones (1 byte each), at the top level (the 2023 bare
// list of entries) or under "entries".
inline std::string ListOfNones(size_t count, bool under_entries) {
  auto op = [](PickleOpcode code) { return static_cast<char>(code); };
  std::string bytes = {op(PickleOpcode::kProto), '\x02'};
  if (under_entries) {
    bytes += {op(PickleOpcode::kEmptyDict), op(PickleOpcode::kMark)};
    for (std::string_view key : {"version", "2.10", "entries"}) {
      bytes += op(PickleOpcode::kShortBinUnicode);
      bytes += static_cast<char>(key.size());
      bytes += key;
    }
  }
  bytes += {op(PickleOpcode::kEmptyList), op(PickleOpcode::kMark)};
  bytes.append(count, op(PickleOpcode::kNone));
  bytes += op(PickleOpcode::kAppends);
  if (under_entries) bytes += op(PickleOpcode::kSetItems);
  bytes += op(PickleOpcode::kStop);
  return bytes;
}

// Sanitizers reserve terabytes of address space, so limits on it cannot be tested under them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// Runs `body` in a child process whose address space is limited to `bytes` (RLIMIT_AS, what
// `ulimit -v` sets); returns its exit code, or 128 + the signal that ended it (134: an abort).
inline int RunWithAddressSpaceLimit(uint64_t bytes, const std::function<int()>& body) {
  pid_t child = fork();
  if (child == 0) {
    rlimit limit{bytes, bytes};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(99);
    _exit(body());
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace fr::hostile

#endif  // FR_TESTS_DECODE_HOSTILE_DUMPS_H_
