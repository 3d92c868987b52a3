import {
  AliasField,
  CallField,
  DeleteField,
  GroupField,
  IdentifyField,
  PageField,
  ScreenField,
  TrackField,
  type Call,
} from "@switchyard/contracts";

/**
 * The one bridge between the rules' names for a call's fields (PAYLOAD_RULES,
 * call-rules.ts) and the numbers `npm run gen` writes from proto/: a field is
 * known by its property name in the generated type (also its JSON key), and
 * its number is looked up by the generated constant of that name
 * ("previousId" -> AliasField.PREVIOUS_ID). No field number is typed by hand.
 */

/** The payload oneof's case names (the generated `$case`). */
export type PayloadCase = NonNullable<Call["payload"]>["$case"];

/** Each payload message's generated field numbers; tsc refuses a case the generated Call has and this lacks. */
export const PAYLOAD_FIELD_NUMBERS: { readonly [T in PayloadCase]: Readonly<Record<string, number>> } = {
  identify: IdentifyField,
  track: TrackField,
  page: PageField,
  screen: ScreenField,
  group: GroupField,
  alias: AliasField,
  delete: DeleteField,
};

/** A property name's generated constant: "previousId" -> "PREVIOUS_ID" (ts-proto camel-cases the proto's snake_case). */
export function constantNameOf(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase();
}

/** The reverse: "PREVIOUS_ID" -> "previousId". */
export function propertyNameOf(constant: string): string {
  return constant.toLowerCase().replace(/_([a-z0-9])/g, (_match: string, letter: string) => letter.toUpperCase());
}

/** The generated number of a payload's field, by property name; throws (at module load, where tables are built) for a name proto/ lacks. */
export function payloadFieldNumber(type: PayloadCase, key: string): number {
  const constant = constantNameOf(key);
  const field = PAYLOAD_FIELD_NUMBERS[type][constant];
  if (field === undefined) {
    const message = `${type[0]!.toUpperCase()}${type.slice(1)}Field.${constant}`;
    throw new Error(
      `${type}.${key}: proto/ has no such field (no ${message} in the generated field numbers); PAYLOAD_RULES and proto/ disagree`,
    );
  }
  return field;
}

/** The payload's own field number in Call ("identify" -> CallField.IDENTIFY). */
export function callPayloadField(type: PayloadCase): number {
  return CallField[constantNameOf(type) as keyof typeof CallField];
}
