import { Call } from "@switchyard/contracts";
import { CallFieldFinder, callPath, FieldKind, UNUSUAL, type CallPath } from "@switchyard/wire";
import type { CallFilter, FieldCondition, FilterValue } from "@switchyard/workspace";
import type { OutgoingCall } from "./outgoing-calls.js";

/*
 * Destination filters, evaluated on the bytes of each call (semantics: CallFilter and
 * FieldCondition in proto/switchyard/v1/config.proto). A filter is compiled once into a tree
 * of closures over libs/core/wire's CallFieldFinder, which reads only the fields its paths name,
 * in the call's bytes as the batch holds them. The workspace view keeps a connection's filter
 * as the same object until the connection changes, so a filter is compiled once per version.
 */

/** A compiled filter: whether the call the finder reads matches. */
type Test = (finder: CallFieldFinder) => boolean;

const compiled = new WeakMap<CallFilter, Test>();
/** One finder for every call: evaluation is synchronous. */
const finder = new CallFieldFinder();

/** Whether a call matches a connection's filter. */
export function callMatches(filter: CallFilter, call: OutgoingCall): boolean {
  let test = compiled.get(filter);
  if (!test) {
    test = compile(filter);
    compiled.set(filter, test);
  }
  call.readFields(finder);
  try {
    return test(finder);
  } catch (error) {
    if (error !== UNUSUAL) throw error;
  }
  // Bytes in an encoding the plain reads leave to the decoder: their canonical encoding says the same.
  finder.read(Call.encode(call.call()).finish());
  return test(finder);
}

function compile(filter: CallFilter): Test {
  if ("all" in filter) {
    const tests = filter.all.filters.map(compile);
    return (fields) => {
      for (const test of tests) if (!test(fields)) return false;
      return true;
    };
  }
  if ("any" in filter) {
    const tests = filter.any.filters.map(compile);
    return (fields) => {
      for (const test of tests) if (test(fields)) return true;
      return false;
    };
  }
  if ("not" in filter) {
    const test = compile(filter.not);
    return (fields) => !test(fields);
  }
  return compileCondition(filter.field);
}

function compileCondition(condition: FieldCondition): Test {
  const path = callPath(condition.path);
  // The workspace's schema only lets paths through that the body has.
  if (!path) throw new Error(`filter path ${JSON.stringify(condition.path)} names nothing in a call`);
  if ("exists" in condition) {
    const wanted = condition.exists;
    return (fields) => (fields.find(path) !== FieldKind.ABSENT) === wanted;
  }
  if ("equals" in condition) return equalTo(path, condition.equals);
  if ("notEquals" in condition) {
    const equal = equalTo(path, condition.notEquals);
    return (fields) => !equal(fields);
  }
  if ("in" in condition) return oneOf(path, condition.in);
  if ("notIn" in condition) {
    const member = oneOf(path, condition.notIn);
    return (fields) => !member(fields);
  }
  if ("greaterThan" in condition) {
    const bound = condition.greaterThan;
    return (fields) => fields.find(path) === FieldKind.NUMBER && fields.number > bound;
  }
  if ("greaterOrEqual" in condition) {
    const bound = condition.greaterOrEqual;
    return (fields) => fields.find(path) === FieldKind.NUMBER && fields.number >= bound;
  }
  if ("lessThan" in condition) {
    const bound = condition.lessThan;
    return (fields) => fields.find(path) === FieldKind.NUMBER && fields.number < bound;
  }
  if ("lessOrEqual" in condition) {
    const bound = condition.lessOrEqual;
    return (fields) => fields.find(path) === FieldKind.NUMBER && fields.number <= bound;
  }
  const text = condition.contains;
  const bytes = Buffer.from(text, "utf8");
  return (fields) => {
    const kind = fields.find(path);
    if (kind === FieldKind.STRING) return fields.text().includes(text);
    return kind === FieldKind.ARRAY && fields.arrayHoldsText(text, bytes);
  };
}

/** The field is present and its JSON value equals `value` (an absent field equals nothing). */
function equalTo(path: CallPath, value: FilterValue): Test {
  if (value === null) return (fields) => fields.find(path) === FieldKind.NULL;
  if (typeof value === "boolean") return (fields) => fields.find(path) === FieldKind.BOOLEAN && fields.boolean === value;
  if (typeof value === "number") return (fields) => fields.find(path) === FieldKind.NUMBER && fields.number === value;
  const bytes = Buffer.from(value, "utf8");
  return (fields) => fields.find(path) === FieldKind.STRING && fields.textIs(value, bytes);
}

/** The field is present and its JSON value equals one of `values`. */
function oneOf(path: CallPath, values: FilterValue[]): Test {
  const strings = new Set<string>();
  // A Set compares numbers as === does (0 and -0 alike); NaN never reaches it (the schema refuses it).
  const numbers = new Set<number>();
  const booleans = [false, false];
  let withNull = false;
  for (const value of values) {
    if (value === null) withNull = true;
    else if (typeof value === "string") strings.add(value);
    else if (typeof value === "number") numbers.add(value);
    else booleans[value ? 1 : 0] = true;
  }
  return (fields) => {
    switch (fields.find(path)) {
      case FieldKind.STRING:
        return strings.size > 0 && strings.has(fields.text());
      case FieldKind.NUMBER:
        return numbers.has(fields.number);
      case FieldKind.BOOLEAN:
        return booleans[fields.boolean ? 1 : 0]!;
      case FieldKind.NULL:
        return withNull;
      default:
        return false;
    }
  };
}
