// Two JSON printers over a Document:
// - the compact, key-sorted text nlohmann::json::dump() produces for the JSON variant of a dump
//   (_dump_nccl_trace_json / dump_nccl_trace_json in FlightRecorder*.cpp returns result.dump()),
//   and
// - the text Python's json.dumps(pickle.load(f), ensure_ascii=False) prints for a decoded dump,
//   used by `fr-analyze dump FILE --format json`.
//
//   std::string text = WriteNlohmannJson(BuildDumpDocument(spec, DumpFlavor::kJson));
//   std::string logical = WritePythonJson(decoded_document);
//
// Both walk the document with an explicit stack, so depth is bounded by memory, not the C stack.
// Shared values are printed at every reference (as Python and nlohmann do); a reference back to a
// container that is still being printed (a cycle, which Python refuses with "Circular reference
// detected") is printed as null.
#ifndef FR_WRITE_JSON_WRITER_H_
#define FR_WRITE_JSON_WRITER_H_

#include <string>

#include "fr/decode/document.h"

namespace fr {

// nlohmann::json::dump() with default arguments: no whitespace, keys in document order (the JSON
// flavor document is already sorted as nlohmann's std::map objects are), tuples as arrays, UTF-8
// passed through, '"' '\\' \b \f \n \r \t escaped, other control characters as \u00xx (lowercase
// hex), invalid UTF-8 replaced by U+FFFD (nlohmann's default handler would throw instead), floats
// as FormatNlohmannFloat, non-finite floats as null. Non-string keys are converted as Python would.
std::string WriteNlohmannJson(const Document& document);

// Python 3 json.dumps(value, ensure_ascii=False) with its default separators ", " and ": ":
// - dicts in insertion order; a key set twice (also 1, 1.0 and True, which Python treats as one
// key)
//   keeps its first position and key and takes the last value;
// - keys: str as is, int in decimal, float as repr, True/False/None as "true"/"false"/"null";
//   container keys (Python cannot have them as JSON keys) as "<tuple>", "<list>" or "<dict>";
// - tuples as arrays; floats as repr (FormatPythonFloat), NaN/Infinity/-Infinity for non-finite;
// - strings as UTF-8 with the same escapes as above; a UTF-8-encoded lone surrogate (what pickle's
//   surrogatepass produces) as \udXXX, other invalid bytes as U+FFFD.
// ensure_ascii=False was chosen because the output is for people and tools that read UTF-8, and it
// keeps non-ASCII frame names readable.
std::string WritePythonJson(const Document& document);

// Python's repr(float): the shortest digits that read back exactly, fixed notation when the decimal
// exponent is in [-4, 16), otherwise d.ddde+XX; "1.0", "1e+300", "5e-324", "-0.0", "nan", "inf".
std::string FormatPythonFloat(double value);

// nlohmann::json's number output: the same shortest digits, fixed notation for exponents in
// [-4, 15) (so 1e15 prints "1e+15" where Python prints "1000000000000000.0"), "null" for
// non-finite values. nlohmann uses Grisu2, which in rare cases prints a longer (still exact)
// representation than the shortest; this printer always prints the shortest.
std::string FormatNlohmannFloat(double value);

}  // namespace fr

#endif  // FR_WRITE_JSON_WRITER_H_
