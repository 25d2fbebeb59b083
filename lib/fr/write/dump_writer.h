// Writes flight-recorder dumps the way PyTorch does, byte for byte: the pickle of
// torch::jit::Pickler for every dump version, and the JSON variant. Used by tests, benchmarks, the
// job simulator and the built-in example; fr-analyze never needs PyTorch to produce test data.
//
//   DumpSpec spec = ...;
//   std::string bytes = WriteDumpPickle(spec);   // what rank 3's nccl_trace_rank_3 would hold
//   std::string text = WriteDumpJson(spec);      // what _dump_nccl_trace_json would return
//
// What decides the bytes, as read in PyTorch's sources (pytorch/pytorch and forks):
// - torch/csrc/jit/serialization/pickler.cpp: strings memoized by value; containers memoized only
//   when IValue::use_count() > 1, with the BINPUT after their content (see pickle_writer.h).
// - The refcount while pickling depends on the dump code of each version, hence per version:
//   * bare list (TraceUtils.h, 2023), 1.x and 2.0: one dump() builds everything and calls
//     pickle_str on a local, while the locals `all_frames` (every frame dict), `entries`,
//     `pg_config` and `per_comm_dict` are still alive: all of them get a BINPUT, and the top-level
//     object too (`... 75 71 nn 2e`).
//   * 2.2-2.9 (TraceUtils.h / NCCLUtils.hpp, then FlightRecorder.hpp's FlightRecorderNCCL::dump):
//     frames come from getCollectiveTrace(), whose frame cache is gone by then, so only frame dicts
//     shared by several entries are memoized; the top-level dict (`auto result = ...;
//     return pickle_str(result);`) and a non-empty nccl_comm_state (a local inserted by copy) are.
//   * 2.10 (FlightRecorderDetail.hpp): `pickle_str(dump_dict(...))` moves a temporary into the
//     IValue, so neither the top level nor nccl_comm_state is memoized.
// - The JSON variant is nlohmann::json::dump() of a json object (std::map: keys sorted bytewise),
//   see json_writer.h for its number and escape formatting.
// - pg_config comes from std::map<(name, desc), ranks>; c10::Dict::insert and std::map::emplace
//   keep the first of two groups sharing a name. pg_status from std::map<pg_id, ...>, keyed by
//   std::to_string(pg_id) (numeric order in the pickle, string order in JSON). Durations are
//   floats widened to double.
#ifndef FR_WRITE_DUMP_WRITER_H_
#define FR_WRITE_DUMP_WRITER_H_

#include <string>

#include "fr/decode/document.h"
#include "fr/write/dump_spec.h"

namespace fr {

// The pickle PyTorch of `spec.version` writes for `spec` (see BuildDumpDocument for the layout of
// each version and TorchMemoizesTopLevel for the final BINPUT).
std::string WriteDumpPickle(const DumpSpec& spec);

// The JSON variant (keys sorted, compact, no frames, string pg_status, 0 for missing times).
std::string WriteDumpJson(const DumpSpec& spec);

// The logical content of a decoded document as JSON, the way Python's json.dumps would print the
// result of pickle.load: tuples as arrays, non-string dict keys as strings, floats printed so they
// read back exactly. Exactly json.dumps(value, ensure_ascii=False) with default separators; see
// WritePythonJson in json_writer.h for the details. Used by `fr-analyze dump FILE --format json`.
// A document whose shared values nest exponentially prints exponentially large text, as in Python.
std::string WriteLogicalJson(const Document& document);

}  // namespace fr

#endif  // FR_WRITE_DUMP_WRITER_H_
