"""The report's protobuf messages as Python values: Message, a read-only view whose attributes
mirror proto/fr/report.proto, and message_dict(), the plain dicts `--format json` prints.

    fields = message_dict(report.message)      # fr.report.Report as `--format json` has it
    verdict = Message(fields, report.message.DESCRIPTOR).verdict
    verdict.culprit_ranks                       # [37]
    verdict.root_cause                          # None: a field left out reads as None

fr_analyze.Report (in _trace) is made of these; this module depends on no other of the package.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

def _repeated(field) -> bool:
    # protobuf 5.29+ says is_repeated; older runtimes only have label.
    flag = getattr(field, "is_repeated", None)
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def _has_presence(field) -> bool:
    """A field that can be absent: a singular submessage or an `optional` scalar. The report
    leaves such a field out when it does not apply; reading it gives None."""
    if _repeated(field):
        return False
    return field.message_type is not None or field.containing_oneof is not None


def _value(field, value: Any) -> Any:
    message_type = field.message_type
    if message_type is not None and message_type.GetOptions().map_entry:
        value_field = message_type.fields_by_name["value"]
        return {k: _value(value_field, v) for k, v in value.items()}
    if _repeated(field):
        if message_type is not None:
            return [message_dict(v) for v in value]
        return list(value)
    if message_type is not None:
        return message_dict(value)
    return value


def message_dict(message: Any) -> dict:
    """A report message as plain dicts and lists, every field as `--format json` prints it: in
    field-number order, those that do not apply left out, 64-bit integers as ints."""
    fields = {}
    for field in sorted(message.DESCRIPTOR.fields, key=lambda f: f.number):
        if _has_presence(field) and not message.HasField(field.name):
            continue
        fields[field.name] = _value(field, getattr(message, field.name))
    return fields


def _absent_is_none(fields: dict, name: str, descriptor: Any) -> bool:
    field = descriptor.fields_by_name.get(name) if descriptor is not None else None
    return field is not None and _has_presence(field) and name not in fields


class Message:
    """A read-only view of one message of the report: fields are attributes, nested messages are
    Messages, repeated fields are lists. `to_dict()` gives the plain dict."""

    __slots__ = ("_fields", "_descriptor")

    def __init__(self, fields: dict, descriptor: Any = None):
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_descriptor", descriptor)

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._fields[name]
        except KeyError:
            if _absent_is_none(self._fields, name, self._descriptor):
                return None
            raise AttributeError(
                f"report message has no field {name!r}; fields: {', '.join(self._fields)}"
            ) from None
        return _wrap(value, self._field_type(name))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("reports are read-only")

    def __getitem__(self, name: str) -> Any:
        return _wrap(self._fields[name], self._field_type(name))

    def _field_type(self, name: str) -> Any:
        field = self._descriptor.fields_by_name.get(name) if self._descriptor is not None else None
        return None if field is None else field.message_type

    def __contains__(self, name: str) -> bool:
        return name in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __dir__(self):
        return list(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and other._fields == self._fields

    def to_dict(self) -> dict:
        return copy.deepcopy(self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items()
                          if not isinstance(v, (dict, list)))
        return f"Message({inner})"


def _wrap(value: Any, descriptor: Any = None) -> Any:
    if isinstance(value, dict):
        if descriptor is not None and descriptor.GetOptions().map_entry:
            return value  # a map: its keys are data, not field names
        return Message(value, descriptor)
    if isinstance(value, list):
        return [_wrap(v, descriptor) for v in value]
    return value
