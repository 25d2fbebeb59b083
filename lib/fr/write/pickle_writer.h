// Serialises a Document the way torch::jit::Pickler (tag_aggregates = false) serialises the
// equivalent c10::IValue, byte for byte. The flight recorder's dump functions end in such a pickle.
//
//   std::vector<ValueId> held;
//   Document doc = BuildDumpDocument(spec, DumpFlavor::kPickle, &held);
//   std::string bytes = PickleDocument(doc, held);
//
// The rules, from torch/csrc/jit/serialization/pickler.cpp:
// - PROTO 2 first, STOP last; no FRAME, no type tags.
// - Strings are memoized BY VALUE (pushString: BINUNICODE then BINPUT on the first occurrence,
//   BINGET for every later equal string, dict keys included). Memo ids count up from 0 across
//   strings and containers; BINPUT/BINGET hold ids up to 255, LONG_BINPUT/LONG_BINGET beyond.
// - Containers (and tuples) are memoized BY POINTER only when their IValue refcount is above one
//   (pushIValue: isPtrType() && !isString() && use_count() > 1), and then the BINPUT comes AFTER
//   the content; later references are a BINGET. The refcount is the number of containers that hold
//   the value plus any reference the dump code still holds in a local variable: the caller passes
//   those as `held` (see BuildDumpDocument). The root counts one reference for the call itself.
// - Lists: EMPTY_LIST MARK items APPENDS; dicts: EMPTY_DICT MARK k v ... SETITEMS, also when empty.
//   Tuples: EMPTY_TUPLE, TUPLE1, TUPLE2, TUPLE3 by size, otherwise MARK items TUPLE.
// - Ints: BININT1 (0..255), BININT2 (256..65535), BININT (other int32), otherwise LONG1 with 8
//   little-endian two's-complement bytes. Floats: BINFLOAT, big-endian. NONE, NEWTRUE, NEWFALSE.
// A cycle cannot be pickled by torch (it would recurse forever); here the back reference is written
// as None.
#ifndef FR_WRITE_PICKLE_WRITER_H_
#define FR_WRITE_PICKLE_WRITER_H_

#include <span>
#include <string>

#include "fr/decode/document.h"

namespace fr {

std::string PickleDocument(const Document& document, std::span<const ValueId> held = {});

// Appends to `out` instead (lets benchmarks reuse one buffer).
void AppendPickle(const Document& document, std::span<const ValueId> held, std::string& out);

}  // namespace fr

#endif  // FR_WRITE_PICKLE_WRITER_H_
