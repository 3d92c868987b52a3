import {
  CallBatchField,
  CallField,
  ListValueField,
  StructField,
  StructFieldsEntryField,
  TimestampField,
  ValueField,
} from "@switchyard/contracts";

/*
 * Tags (field number << 3 | wire type), the numbers the hand-written readers
 * switch on, made once from the generated field numbers. A Call's payload
 * fields are in call-shape.ts.
 */

/** Field numbers of google.protobuf.Struct, its map entry, Value and ListValue, for the encoders that write them by hand. */
export const STRUCT_FIELD_NUMBERS = {
  STRUCT_FIELDS: StructField.FIELDS,
  ENTRY_KEY: StructFieldsEntryField.KEY,
  ENTRY_VALUE: StructFieldsEntryField.VALUE,
  VALUE_NULL: ValueField.NULL_VALUE,
  VALUE_NUMBER: ValueField.NUMBER_VALUE,
  VALUE_STRING: ValueField.STRING_VALUE,
  VALUE_BOOL: ValueField.BOOL_VALUE,
  VALUE_STRUCT: ValueField.STRUCT_VALUE,
  VALUE_LIST: ValueField.LIST_VALUE,
  LIST_VALUES: ListValueField.VALUES,
} as const;

/** Protobuf's wire types. */
export const WireType = { VARINT: 0, I64: 1, LEN: 2, START_GROUP: 3, END_GROUP: 4, I32: 5 } as const;

/** A tag: field number << 3 | wire type. */
export function fieldTag(fieldNumber: number, wireType: number): number {
  return (fieldNumber << 3) | wireType;
}

/** The tag of a length-delimited field (strings, messages). */
export function lengthTag(fieldNumber: number): number {
  return fieldTag(fieldNumber, WireType.LEN);
}

export const BATCH_ID = lengthTag(CallBatchField.BATCH_ID);
export const BATCH_SOURCE_ID = lengthTag(CallBatchField.SOURCE_ID);
export const BATCH_RECEIVED_AT = lengthTag(CallBatchField.RECEIVED_AT);
export const BATCH_CALLS = lengthTag(CallBatchField.CALLS);

export const MESSAGE_ID = lengthTag(CallField.MESSAGE_ID);
export const USER_ID = lengthTag(CallField.USER_ID);
export const ANONYMOUS_ID = lengthTag(CallField.ANONYMOUS_ID);
export const TIMESTAMP = lengthTag(CallField.TIMESTAMP);
export const CONTEXT = lengthTag(CallField.CONTEXT);
export const INTEGRATIONS = lengthTag(CallField.INTEGRATIONS);
export const RECEIVED_AT = lengthTag(CallField.RECEIVED_AT);

export const TIMESTAMP_SECONDS = fieldTag(TimestampField.SECONDS, WireType.VARINT);
export const TIMESTAMP_NANOS = fieldTag(TimestampField.NANOS, WireType.VARINT);

export const STRUCT_FIELDS = lengthTag(StructField.FIELDS);
export const ENTRY_KEY = lengthTag(StructFieldsEntryField.KEY);
export const ENTRY_VALUE = lengthTag(StructFieldsEntryField.VALUE);
export const VALUE_NULL = fieldTag(ValueField.NULL_VALUE, WireType.VARINT);
export const VALUE_NUMBER = fieldTag(ValueField.NUMBER_VALUE, WireType.I64);
export const VALUE_STRING = lengthTag(ValueField.STRING_VALUE);
export const VALUE_BOOL = fieldTag(ValueField.BOOL_VALUE, WireType.VARINT);
export const VALUE_STRUCT = lengthTag(ValueField.STRUCT_VALUE);
export const VALUE_LIST = lengthTag(ValueField.LIST_VALUE);
export const LIST_VALUES = lengthTag(ListValueField.VALUES);
