import { fql, subscriptions, type FqlToken, type Subscription } from "./segment-packages.js";

/*
 * A mapping's trigger: which calls it takes, in Segment's subscription language
 * (`type = "track" and event = "Order Completed"`). Calls are matched by Segment's own
 * parser and matcher, so a trigger pasted from Segment takes the same calls. That parser
 * accepts some text it then reads in a way nobody meant (`type =` compares the type with
 * "eos", `'x'` keeps its quotes, `a and b or c` takes the last operator for the whole
 * line, a second level of parentheses ends the first), so a trigger is first held to the
 * grammar below and refused, with where, when it strays:
 *
 *   trigger   = clause { ("and" | "or") clause }       one operator per level
 *   clause    = "(" condition { ("and" | "or") condition } ")" | condition
 *   condition = field operator value
 *             | ["!"] ("contains" | "match") "(" field "," string ")"
 *   field     = "type" | "event" | "name" | "userId" | ("properties" | "traits" | "context") "." key { "." key }
 *   operator  = "=" | "!=" | "<" | "<=" | ">" | ">="    (the last four for numbers, on properties, traits or context)
 *   value     = "double-quoted string" | number | null | true | false
 *
 * match's pattern has one `*`, at its start or its end (Segment reads no other pattern), and inside
 * parentheses contains( and match( stand last (Segment's parser ends the group at their ")").
 */

/** A trigger that passed the grammar, ready to test calls in Segment's event shape. */
export class Trigger {
  private constructor(
    /** The trigger's text, as saved. */
    readonly text: string,
    private readonly subscription: Subscription,
  ) {}

  /** The trigger, or why it is refused (with its line and column). */
  static parse(text: string): Trigger | TriggerError {
    const lexed = fql().lex(text);
    if (lexed.error) {
      const { line, column } = lexed.error.cursor;
      return new TriggerError(`${lexed.error.message} at line ${line + 1}, column ${column + 1}`);
    }
    const problem = new GrammarCheck(text, lexed.tokens).problem();
    if (problem) return new TriggerError(problem);
    const subscription = subscriptions().parseFql(text);
    if ("error" in subscription) {
      const { error } = subscription as { error: Error };
      return new TriggerError(`is not a trigger Segment's parser reads (${error.message})`);
    }
    return new Trigger(text, subscription);
  }

  /** Whether the trigger takes the event (a call in Segment's JSON shape). */
  matches(event: Record<string, unknown>): boolean {
    return subscriptions().validate(this.subscription, event);
  }
}

/** Why a trigger is refused: a message to put after the field's name. */
export class TriggerError {
  constructor(readonly message: string) {}
}

const FIELDS_WITHOUT_KEYS = new Set(["type", "event", "name", "userId"]);
const FIELDS_WITH_KEYS = new Set(["properties", "traits", "context"]);
const EQUALITY = new Set(["=", "!="]);
const ORDERING = new Set(["<", "<=", ">", ">="]);
const FUNCTIONS = new Set(["contains", "match"]);

/** Walks the tokens by the grammar; the first problem found, with where it is, or undefined. */
class GrammarCheck {
  private index = 0;
  /** Where each token starts in the text, found by searching from the end of the one before. */
  private readonly starts: number[] = [];

  constructor(
    private readonly text: string,
    private readonly tokens: readonly FqlToken[],
  ) {
    let at = 0;
    for (const token of tokens) {
      const start = token.type === "eos" ? text.length : text.indexOf(token.value, at);
      this.starts.push(start < 0 ? at : start);
      at = (start < 0 ? at : start) + (token.type === "eos" ? 0 : token.value.length);
    }
  }

  problem(): string | undefined {
    try {
      if (this.peek().type === "eos") return 'is empty: give at least one condition, e.g. type = "track"';
      this.sequence(true);
      this.expect("eos", "the end of the trigger");
      return undefined;
    } catch (error) {
      if (error instanceof GrammarProblem) return error.message;
      throw error;
    }
  }

  /** clause { conj clause } at the top level, condition { conj condition } inside parentheses; one conj per level. */
  private sequence(top: boolean): void {
    let conjunction: string | undefined;
    for (;;) {
      if (top && this.peek().type === "parenleft") {
        this.next();
        this.sequence(false);
        this.expect("parenright", '")"');
      } else this.condition();
      const token = this.peek();
      if (token.type !== "conditional") return;
      if (!top && this.lastWasCall) {
        throw this.fail(`contains( and match( stand last in a group: Segment's parser ends the group at their ")"`);
      }
      if (conjunction !== undefined && token.value !== conjunction) {
        throw this.fail(`mixes "${conjunction}" and "${token.value}" at one level: group them with parentheses`);
      }
      conjunction = token.value;
      this.next();
    }
  }

  /** The condition read last was a contains( or match( call. */
  private lastWasCall = false;

  private condition(): void {
    this.lastWasCall = false;
    const token = this.peek();
    if (token.type === "parenleft") throw this.fail("nests parentheses inside parentheses, which Segment does not read: use one level");
    const negated = token.type === "operator" && token.value === "!";
    if (negated) this.next();
    const name = this.peek();
    if (name.type === "ident" && FUNCTIONS.has(name.value) && this.tokens[this.index + 1]?.type === "parenleft") {
      this.next();
      this.next();
      if (this.field() === "type") throw this.fail(`${name.value}( does not read type: compare it with = or !=`);
      this.expect("comma", '","');
      const pattern = this.peek();
      const value = this.string(pattern);
      if (name.value === "match" && !/^\*[^*]*$|^[^*]*\*$/.test(value)) {
        throw this.fail('match: the pattern has one "*", at its start ("*Completed") or its end ("Order*")');
      }
      this.next();
      this.expect("parenright", '")"');
      this.lastWasCall = true;
      return;
    }
    if (negated) throw this.fail('"!" stands only before contains( or match(');
    const field = this.field();
    const operator = this.peek();
    if (operator.type !== "operator" || !(EQUALITY.has(operator.value) || ORDERING.has(operator.value))) {
      throw this.fail(`expects an operator (=, !=, <, <=, >, >=) after ${field}`);
    }
    if (ORDERING.has(operator.value) && FIELDS_WITHOUT_KEYS.has(field)) {
      throw this.fail(`${operator.value} compares numbers: ${field} is text (use = or !=)`);
    }
    this.next();
    const value = this.peek();
    const isBoolean = value.type === "ident" && (value.value === "true" || value.value === "false");
    if (value.type === "string") this.string(value);
    else if (value.type !== "number" && value.type !== "null" && !isBoolean) {
      throw this.fail(`expects a value after ${operator.value}: a "double-quoted" string, a number, null, true or false`);
    }
    if (ORDERING.has(operator.value) && value.type !== "number") throw this.fail(`${operator.value} needs a number`);
    // Segment compares these fields' values as text, whatever the literal: only text says what it means.
    if ((field === "type" || field === "event") && value.type !== "string")
      throw this.fail(`${field} compares with a "double-quoted" string`);
    if ((field === "name" || field === "userId") && value.type !== "string" && value.type !== "null") {
      throw this.fail(`${field} compares with a "double-quoted" string or null`);
    }
    if (isBoolean && operator.value === "!=") {
      throw this.fail(
        `!= ${value.value} compares with the text "${value.value}" in Segment: use = ${value.value === "true" ? "false" : "true"}`,
      );
    }
    this.next();
  }

  /** A field name; returns its first part. */
  private field(): string {
    const first = this.peek();
    if (first.type !== "ident" || !(FIELDS_WITHOUT_KEYS.has(first.value) || FIELDS_WITH_KEYS.has(first.value))) {
      throw this.fail(
        `expects a field: type, event, name, userId, or a key under properties., traits. or context., not ${describe(first)}`,
      );
    }
    this.next();
    if (FIELDS_WITHOUT_KEYS.has(first.value)) {
      if (this.peek().type === "dot") throw this.fail(`${first.value} has no keys`);
      return first.value;
    }
    if (this.peek().type !== "dot") throw this.fail(`${first.value} needs a key: ${first.value}.<key>`);
    while (this.peek().type === "dot") {
      this.next();
      if (this.peek().type !== "ident") throw this.fail(`expects a key after "."`);
      this.next();
    }
    return first.value;
  }

  /** A double-quoted string's content. */
  private string(token: FqlToken): string {
    if (token.type !== "string") throw this.fail(`expects a "double-quoted" string, not ${describe(token)}`);
    if (!token.value.startsWith('"')) throw this.fail("uses single quotes, which Segment keeps as part of the text: use double quotes");
    return token.value.slice(1, -1);
  }

  private expect(type: string, what: string): void {
    const token = this.peek();
    if (token.type !== type) throw this.fail(`expects ${what}, not ${describe(token)}`);
    this.next();
  }

  private peek(): FqlToken {
    return this.tokens[this.index] ?? { type: "eos", value: "eos" };
  }

  private next(): void {
    this.index++;
  }

  /** A problem at the current token, with its line and column. */
  private fail(message: string): GrammarProblem {
    const start = this.starts[Math.min(this.index, this.starts.length - 1)] ?? this.text.length;
    const before = this.text.slice(0, start);
    const line = before.split("\n").length;
    const column = start - (before.lastIndexOf("\n") + 1) + 1;
    return new GrammarProblem(`${message} (line ${line}, column ${column})`);
  }
}

class GrammarProblem extends Error {}

function describe(token: FqlToken): string {
  return token.type === "eos" ? "the end" : JSON.stringify(token.value);
}
