import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { subscriptions } from "./segment-packages.js";
import { Trigger, TriggerError } from "./trigger.js";

function parsed(text: string): Trigger {
  const trigger = Trigger.parse(text);
  if (trigger instanceof TriggerError) throw new Error(`${text}: ${trigger.message}`);
  return trigger;
}

function refusal(text: string): string {
  const trigger = Trigger.parse(text);
  if (!(trigger instanceof TriggerError)) throw new Error(`${text}: accepted`);
  return trigger.message;
}

const ORDER = { type: "track", event: "Order Completed", userId: "u-1", properties: { total: 42, coupon: "SPRING" } };

describe("Trigger", () => {
  it("takes the calls Segment's subscription language takes", () => {
    expect(parsed('type = "track" and event = "Order Completed"').matches(ORDER)).toBe(true);
    expect(parsed('type = "track" and event = "Order Started"').matches(ORDER)).toBe(false);
    expect(parsed('type = "identify" or type = "track"').matches(ORDER)).toBe(true);
    expect(parsed("properties.total > 40").matches(ORDER)).toBe(true);
    expect(parsed("properties.total >= 43").matches(ORDER)).toBe(false);
    expect(parsed('contains(event, "Order")').matches(ORDER)).toBe(true);
    expect(parsed('!contains(event, "Order")').matches(ORDER)).toBe(false);
    expect(parsed('match(event, "*Completed")').matches(ORDER)).toBe(true);
    expect(parsed('type = "track" and (event = "A" or event = "Order Completed")').matches(ORDER)).toBe(true);
    expect(parsed("properties.coupon != null").matches(ORDER)).toBe(true);
    expect(parsed("context.app.version = null").matches(ORDER)).toBe(true);
  });

  it("refuses what Segment's parser would read otherwise than written, saying where", () => {
    expect(refusal("")).toMatch(/^is empty/);
    expect(refusal("type =")).toBe('expects a value after =: a "double-quoted" string, a number, null, true or false (line 1, column 7)');
    expect(refusal("event = 'Order'")).toBe(
      "uses single quotes, which Segment keeps as part of the text: use double quotes (line 1, column 9)",
    );
    expect(refusal('type = "track" and event = "A" or userId = "u"')).toBe(
      'mixes "and" and "or" at one level: group them with parentheses (line 1, column 32)',
    );
    expect(refusal('((type = "track"))')).toMatch(/^nests parentheses/);
    expect(refusal('anonymousId = "a"')).toMatch(/^expects a field: type, event, name, userId/);
    expect(refusal('event > "a"')).toMatch(/^> compares numbers: event is text/);
    expect(refusal('match(event, "Or*der")')).toMatch(/^match: the pattern has one "\*"/);
    expect(refusal('(contains(event, "a") or type = "page") and userId = "u"')).toMatch(/^contains\( and match\( stand last in a group/);
    expect(refusal('type = "track')).toMatch(/^unterminated string at line 1, column/);
    expect(refusal('type = "track" and\nevent')).toBe("expects an operator (=, !=, <, <=, >, >=) after event (line 2, column 6)");
  });

  /** A condition as text, with its plain reading: what it says, evaluated directly. */
  interface Condition {
    text: string;
    holds(event: Event): boolean;
    /** A contains( or match( call, which a group may not start with. */
    call?: boolean;
  }
  type Event = Record<string, unknown>;
  const at = (event: Event, path: string): unknown =>
    path.split(".").reduce<unknown>((value, key) => (value && typeof value === "object" ? (value as Event)[key] : undefined), event);
  const text = fc.string({ maxLength: 5 }).filter((value) => !/["'*\\\n]/.test(value));

  const textCondition = fc
    .tuple(fc.constantFrom("type", "event", "name", "userId", "properties.coupon", "context.app.version"), fc.constantFrom("=", "!="), text)
    .map(([path, operator, value]): Condition => ({
      text: `${path} ${operator} ${JSON.stringify(value)}`,
      holds: (event) => (operator === "=" ? at(event, path) === value : at(event, path) !== value),
    }));
  const nullCondition = fc
    .tuple(fc.constantFrom("name", "userId", "properties.coupon", "traits.plan"), fc.constantFrom("=", "!="))
    .map(([path, operator]): Condition => ({
      text: `${path} ${operator} null`,
      holds: (event) => (at(event, path) === undefined || at(event, path) === null) === (operator === "="),
    }));
  const numberCondition = fc
    .tuple(
      fc.constantFrom("properties.total", "traits.age"),
      fc.constantFrom("=", "!=", "<", "<=", ">", ">="),
      fc.integer({ min: -5, max: 50 }),
    )
    .map(([path, operator, number]): Condition => ({
      text: `${path} ${operator} ${number}`,
      holds: (event) => {
        const value = at(event, path);
        if (typeof value !== "number") return false;
        return {
          "=": value === number,
          "!=": value !== number,
          "<": value < number,
          "<=": value <= number,
          ">": value > number,
          ">=": value >= number,
        }[operator]!;
      },
    }));
  const booleanCondition = fc
    .tuple(fc.constantFrom("properties.paid", "traits.vip"), fc.boolean())
    .map(([path, flag]): Condition => ({ text: `${path} = ${flag}`, holds: (event) => at(event, path) === flag }));
  const functionCondition = fc
    .tuple(
      fc.boolean(),
      fc.constantFrom("contains", "match"),
      fc.constantFrom("event", "name", "properties.coupon"),
      text,
      fc.constantFrom("start", "end"),
    )
    .map(([negated, fn, path, value, star]): Condition => {
      const pattern = fn === "match" ? (star === "start" ? `*${value}` : `${value}*`) : value;
      return {
        call: true,
        text: `${negated ? "!" : ""}${fn}(${path}, ${JSON.stringify(pattern)})`,
        holds: (event) => {
          const actual = at(event, path);
          if (typeof actual !== "string") return false;
          const found = fn === "contains" ? actual.includes(value) : star === "start" ? actual.endsWith(value) : actual.startsWith(value);
          return negated ? !found : found;
        },
      };
    });
  const condition = fc.oneof(textCondition, nullCondition, numberCondition, booleanCondition, functionCondition);
  const conjunction = fc.constantFrom("and", "or");
  const joined = (conditions: Condition[], conj: string, paren: boolean): Condition => ({
    text: paren ? `(${conditions.map((c) => c.text).join(` ${conj} `)})` : conditions.map((c) => c.text).join(` ${conj} `),
    holds: (event) => (conj === "and" ? conditions.every((c) => c.holds(event)) : conditions.some((c) => c.holds(event))),
  });
  const group = fc.tuple(fc.array(condition, { minLength: 1, maxLength: 3 }), conjunction).map(([conditions, conj]) => {
    // Inside parentheses a call stands last (the grammar's rule): at most one, at the end.
    const comparisons = conditions.filter((c) => !c.call);
    const call = conditions.find((c) => c.call);
    const members = call ? [...comparisons, call] : comparisons;
    return members.length > 1 ? joined(members, conj, true) : members[0]!;
  });
  const trigger = fc
    .tuple(fc.array(group, { minLength: 1, maxLength: 3 }), conjunction)
    .map(([groups, conj]) => joined(groups, conj, false));
  const event = fc.record(
    {
      type: fc.constantFrom("track", "page", "identify"),
      event: fc.constantFrom("Order Completed", "ab", ""),
      name: fc.constantFrom("Home", "ab", null),
      userId: fc.constantFrom("u-1", "ab"),
      properties: fc.record(
        {
          total: fc.oneof(fc.integer({ min: -5, max: 50 }), fc.constant("7")),
          coupon: fc.oneof(fc.constantFrom("ab", "SPRING", null), fc.string({ maxLength: 5 })),
          paid: fc.constantFrom(true, false, "true"),
        },
        { requiredKeys: [] },
      ),
      traits: fc.record(
        { plan: fc.constantFrom("pro", null), age: fc.integer({ min: 0, max: 60 }), vip: fc.boolean() },
        { requiredKeys: [] },
      ),
      context: fc.record({ app: fc.record({ version: fc.constantFrom("1.2", "2") }) }),
    },
    { requiredKeys: ["type"] },
  );

  it("takes exactly the calls a plain reading of the trigger takes, for every trigger of the grammar", () => {
    fc.assert(
      fc.property(trigger, fc.array(event, { minLength: 1, maxLength: 5 }), (written, events) => {
        const compiled = parsed(written.text);
        for (const call of events) {
          expect(compiled.matches(call), `${written.text} on ${JSON.stringify(call)}`).toBe(written.holds(call));
          expect(compiled.matches(call)).toBe(subscriptions().validate(subscriptions().parseFql(written.text), call));
        }
      }),
      { numRuns: 500 },
    );
  });
});
