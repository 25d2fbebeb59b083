#include "fr/report/proto_json.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/base/json_string.h"
#include "fr/base/utf8.h"

namespace fr {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendDouble(double value, std::string* out) {
  // JSON has no NaN or infinities; protobuf's mapping writes them as strings.
  if (std::isnan(value)) {
    *out += "\"NaN\"";
  } else if (std::isinf(value)) {
    *out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else if (value == std::floor(value) && std::fabs(value) < 1e15) {
    *out += fmt::format("{}", static_cast<int64_t>(value));
  } else {
    *out += fmt::format("{}", value);  // shortest form that reads back exactly
  }
}

class Writer {
 public:
  explicit Writer(std::string* out) : out_(*out) {}

  void WriteMessage(const Message& message, int depth) {
    const Reflection* reflection = message.GetReflection();
    const auto* descriptor = message.GetDescriptor();
    std::vector<const FieldDescriptor*> fields;
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const FieldDescriptor* field = descriptor->field(i);
      // Every field is printed, as with always_print_primitive_fields, except an unset field
      // with explicit presence (`optional`): absent means "not known".
      if (field->has_presence() && !field->is_repeated() &&
          field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE &&
          !reflection->HasField(message, field)) {
        continue;
      }
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field->is_repeated() &&
          !reflection->HasField(message, field)) {
        continue;  // an unset submessage is omitted, as in protobuf's mapping
      }
      fields.push_back(field);
    }
    if (fields.empty()) {
      out_ += "{}";
      return;
    }
    out_ += "{\n";
    for (size_t i = 0; i < fields.size(); ++i) {
      Indent(depth + 1);
      AppendJsonString(fields[i]->name(), &out_);
      out_ += ": ";
      WriteField(message, fields[i], depth + 1);
      out_ += i + 1 < fields.size() ? ",\n" : "\n";
    }
    Indent(depth);
    out_ += '}';
  }

 private:
  void Indent(int depth) { out_.append(static_cast<size_t>(depth), ' '); }

  void WriteField(const Message& message, const FieldDescriptor* field, int depth) {
    const Reflection* reflection = message.GetReflection();
    if (field->is_map()) {
      WriteMap(message, field, depth);
      return;
    }
    if (!field->is_repeated()) {
      WriteValue(message, field, -1, depth);
      return;
    }
    int size = reflection->FieldSize(message, field);
    if (size == 0) {
      out_ += "[]";
      return;
    }
    out_ += "[\n";
    for (int i = 0; i < size; ++i) {
      Indent(depth + 1);
      WriteValue(message, field, i, depth + 1);
      out_ += i + 1 < size ? ",\n" : "\n";
    }
    Indent(depth);
    out_ += ']';
  }

  // Maps as objects keyed by the map's key, sorted so that the output is deterministic.
  void WriteMap(const Message& message, const FieldDescriptor* field, int depth) {
    const Reflection* reflection = message.GetReflection();
    int size = reflection->FieldSize(message, field);
    if (size == 0) {
      out_ += "{}";
      return;
    }
    std::vector<const Message*> entries;
    for (int i = 0; i < size; ++i) {
      entries.push_back(&reflection->GetRepeatedMessage(message, field, i));
    }
    const FieldDescriptor* key = field->message_type()->map_key();
    const FieldDescriptor* value = field->message_type()->map_value();
    std::sort(entries.begin(), entries.end(), [&](const Message* a, const Message* b) {
      return a->GetReflection()->GetString(*a, key) < b->GetReflection()->GetString(*b, key);
    });
    out_ += "{\n";
    for (size_t i = 0; i < entries.size(); ++i) {
      Indent(depth + 1);
      AppendJsonString(entries[i]->GetReflection()->GetString(*entries[i], key), &out_);
      out_ += ": ";
      WriteValue(*entries[i], value, -1, depth + 1);
      out_ += i + 1 < entries.size() ? ",\n" : "\n";
    }
    Indent(depth);
    out_ += '}';
  }

  // One value of `field`: the singular value, or element `index` of a repeated field.
  void WriteValue(const Message& message, const FieldDescriptor* field, int index, int depth) {
    const Reflection* r = message.GetReflection();
    bool repeated = index >= 0;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        out_ += fmt::format("{}", repeated ? r->GetRepeatedInt32(message, field, index)
                                           : r->GetInt32(message, field));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        out_ += fmt::format("{}", repeated ? r->GetRepeatedInt64(message, field, index)
                                           : r->GetInt64(message, field));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        out_ += fmt::format("{}", repeated ? r->GetRepeatedUInt32(message, field, index)
                                           : r->GetUInt32(message, field));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        out_ += fmt::format("{}", repeated ? r->GetRepeatedUInt64(message, field, index)
                                           : r->GetUInt64(message, field));
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        AppendDouble(
            repeated ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field),
            &out_);
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        AppendDouble(
            repeated ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field),
            &out_);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        out_ += (repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field))
                    ? "true"
                    : "false";
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        AppendJsonString(repeated ? r->GetRepeatedEnum(message, field, index)->name()
                                  : r->GetEnum(message, field)->name(),
                         &out_);
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        AppendJsonString(
            repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field),
            &out_);
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        WriteMessage(
            repeated ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field),
            depth);
        break;
    }
  }

  std::string& out_;
};

}  // namespace

std::string ProtoToJson(const Message& message) {
  std::string out;
  Writer(&out).WriteMessage(message, 0);
  out += '\n';
  return out;
}

}  // namespace fr
