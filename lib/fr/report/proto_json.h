// The JSON form of the project's messages (Report, LoadSummary): protobuf's JSON mapping with the
// original snake_case field names, every field printed, in field-number order, indented by one
// space per level, with one difference that the report contract asks for: 64-bit integers
// (sequence ids, byte counts, times in ns) are JSON numbers, not strings. Numbers up to 2^63
// survive Python's json, jq and Go intact; JavaScript readers past 2^53 should parse them as
// BigInt.
//
//   std::string json = ProtoToJson(report);   // what `fr-analyze analyze DIR --format json` prints
//
// Written over protobuf's reflection so that the schema in proto/ stays the only definition.
#ifndef FR_REPORT_PROTO_JSON_H_
#define FR_REPORT_PROTO_JSON_H_

#include <string>

#include "google/protobuf/message.h"

namespace fr {

// Never fails: the project's messages hold only strings, integers, bools, doubles, submessages,
// repeated fields and maps with string keys. A string that is not UTF-8 is written as ValidUtf8
// makes it, so the output is always valid JSON. Ends with a newline.
std::string ProtoToJson(const google::protobuf::Message& message);

}  // namespace fr

#endif  // FR_REPORT_PROTO_JSON_H_
