import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Struct, Struct_FieldsEntry } from "./gen/google/protobuf/struct.js";
import { StructField } from "./gen/field-numbers.js";

/*
 * The generated google.protobuf.Struct code copies members with plain
 * assignment (`object[key] = value`), and assigning the key "__proto__" to a
 * plain object sets its prototype instead of adding a member: a call's
 * `{"__proto__": ...}` was dropped, in encoding and in decoding. Generated
 * code is not edited by hand (npm run gen rewrites it), so the four functions
 * that copy members are replaced here, once, when this module loads; they do
 * what the generated ones do, except that every key is kept as data.
 * libs/core/contracts loads it from its index and from its own decoder.
 */

/** `object[key] = value`, except that "__proto__" becomes an own, enumerable member like any other key. */
export function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(object, key, { value, enumerable: true, configurable: true, writable: true });
  else object[key] = value;
}

Struct.wrap = (object: Record<string, unknown> | undefined): Struct => {
  const struct: Struct = { fields: {} };
  if (object !== undefined) for (const key of Object.keys(object)) setMember(struct.fields, key, object[key]);
  return struct;
};

Struct.unwrap = (message: Struct): Record<string, unknown> => {
  const object: Record<string, unknown> = {};
  if (message.fields) for (const key of Object.keys(message.fields)) setMember(object, key, message.fields[key]);
  return object;
};

Struct.fromPartial = (object): Struct => {
  const struct: Struct = { fields: {} };
  for (const [key, value] of Object.entries(object.fields ?? {})) if (value !== undefined) setMember(struct.fields, key, value);
  return struct;
};

/** The tag of Struct.fields (length-delimited map entries). */
const STRUCT_FIELDS_TAG = (StructField.FIELDS << 3) | 2;

/** The generated Struct.decode (same recursion limit, skipping and end-group rules), keeping every key. */
Struct.decode = (input: BinaryReader | Uint8Array, length?: number): Struct => {
  const reader = input instanceof BinaryReader ? input : new BinaryReader(input);
  const depthHolder = reader as unknown as { __tsProtoDecodeDepth?: number };
  const previousRecursionDepth = depthHolder.__tsProtoDecodeDepth ?? 0;
  if (previousRecursionDepth >= 100) throw new globalThis.Error("protobuf decode recursion limit exceeded");
  depthHolder.__tsProtoDecodeDepth = previousRecursionDepth + 1;
  try {
    const end = length === undefined ? reader.len : reader.pos + length;
    const message: Struct = { fields: {} };
    while (reader.pos < end) {
      const tag = reader.uint32();
      if (tag === STRUCT_FIELDS_TAG) {
        const entry = Struct_FieldsEntry.decode(reader, reader.uint32());
        if (entry.value !== undefined) setMember(message.fields, entry.key, entry.value);
        continue;
      }
      if ((tag & 7) === 4 || tag === 0) break;
      reader.skip(tag & 7);
    }
    return message;
  } finally {
    depthHolder.__tsProtoDecodeDepth = previousRecursionDepth;
  }
};
