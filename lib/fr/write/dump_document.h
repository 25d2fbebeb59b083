// Turns a DumpSpec into the logical Document that PyTorch's flight recorder of `spec.version` would
// have built before serialising it: the exact top-level and entry key order of each version, frame
// dicts shared between entries, and the JSON variant's own layout.
//
//   std::vector<ValueId> held;
//   Document doc = BuildDumpDocument(spec, DumpFlavor::kPickle, &held);
//   std::string bytes = PickleDocument(doc, held);   // == WriteDumpPickle(spec)
//
// Facts per version (from PyTorch's TraceUtils.h / NCCLUtils / FlightRecorder.hpp,
// FlightRecorder.cpp, FlightRecorderDetail.hpp; see dump_writer.h for the memo rules):
//
//   version   top level                                   entry keys
//   "" (2023) bare list of entries                        pg_id seq_id profiling_name
//                                                         time_created_us input_sizes output_sizes
//                                                         state retired frames
//   1.0       {entries, version}                          as "" (time_created_us)
//   1.1       {entries, version}                          pg_id seq_id profiling_name
//                                                         time_created_ns duration_ms? input_sizes
//                                                         output_sizes state time_discovered_*
//                                                         retired frames
//   1.2-1.x   {entries, version, nccl_comm_state?,        record_id pg_id seq_id op_id, then as 1.1
//             pg_config: {int pg_id: [int rank...]}}
//   2.0-2.1   {entries, version, nccl_comm_state?,        newest keys without timeout_ms and the
//             pg_config}                                  thread keys, frames LAST, C++ dtype names
//   2.2       {version, pg_config, entries?, ncs?}        newest keys without the thread keys
//   2.3-2.5   {version, pg_config, pg_status, entries?, ncs?}
//   2.6-2.9   {version, pg_config, nccl_version, pg_status, entries?, ncs?}
//   2.10+     {version, pg_config, comm_lib_version, pg_status, entries?, ncs?}
//
// Newest entry keys: frames? record_id pg_id process_group thread_name thread_id collective_seq_id
// p2p_seq_id op_id profiling_name time_created_ns duration_ms? input_sizes input_dtypes
// output_sizes output_dtypes state time_discovered_started_ns time_discovered_completed_ns retired
// timeout_ms is_p2p. thread_name/thread_id first appear after 2.7 (2.7's FlightRecorder.hpp has no
// such constant, 2.10's has); this writer adds them from 2.8 on (kFirstVersionWithThreads), which
// is an assumption: no 2.8/2.9 source was available to confirm it.
//
// Not verified against real files: the entry keys of 1.0 (assumed equal to the bare list, which
// shares its time_created_us) and of 1.2/1.3 (assumed equal to 1.4), and whether 2.0 already had
// is_p2p (the format notes say only that 2.0 lacks timeout_ms).
#ifndef FR_WRITE_DUMP_DOCUMENT_H_
#define FR_WRITE_DUMP_DOCUMENT_H_

#include <string_view>
#include <vector>

#include "fr/decode/document.h"
#include "fr/write/dump_spec.h"

namespace fr {

enum class DumpFlavor {
  // What the pickle holds: insertion order of the C++ code, None for unknown times, frames.
  kPickle,
  // What _dump_nccl_trace_json returns (nlohmann::json): keys sorted at every level, no frames,
  // process_group a list, pg_status values strings, 0 for unknown times, entries omitted when
  // empty, nccl_comm_state always present ({} when the spec has none).
  kJson,
};

// A dump format version as (major, minor); the bare list of 2023 is {0, 0} with `bare` set.
struct DumpVersion {
  int major = 0;
  int minor = 0;
  bool bare = false;

  friend auto operator<=>(const DumpVersion& a, const DumpVersion& b) {
    if (auto c = a.major <=> b.major; c != 0) return c;
    return a.minor <=> b.minor;
  }
  friend bool operator==(const DumpVersion&, const DumpVersion&) = default;
};

// "" -> bare; "2.10" -> {2, 10}. Unparsable text is treated as the newest known version.
DumpVersion ParseDumpVersion(std::string_view version);

inline constexpr DumpVersion kFirstVersionWithThreads{2, 8};

// True when torch's pickle of that version ends with a BINPUT of the top-level object (`... 71 nn
// 2e` or `72 nnnnnnnn 2e`): the dump function pickled a local that it still held (refcount 2).
bool TorchMemoizesTopLevel(const DumpVersion& version);

// Builds the document. When `held_by_torch` is given it receives the containers that PyTorch's dump
// code of that version still holds in a local variable while pickling (the top-level object, the
// entries list, pg_config, nccl_comm_state, the frame cache): torch::jit::Pickler memoizes every
// container whose refcount exceeds one, so these get a BINPUT even when referenced once. Only
// meaningful for kPickle.
Document BuildDumpDocument(const DumpSpec& spec, DumpFlavor flavor,
                           std::vector<ValueId>* held_by_torch = nullptr);

// The dtype name PyTorch 2.0 wrote for a c10::toString name ("Float" -> "float",
// "BFloat16" -> "c10::BFloat16"); unknown names pass through unchanged.
std::string_view CppDtypeName(std::string_view scalar_type_name);

}  // namespace fr

#endif  // FR_WRITE_DUMP_DOCUMENT_H_
