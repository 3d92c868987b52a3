// Services build their metrics from these, so prom-client stays one dependency of this package.
export { Counter, Gauge, Histogram, Registry } from "prom-client";

export const METRIC_PREFIX = "switchyard_";

/**
 * One pre-bound child per label value, made once at start-up: the hot paths
 * then increment a field instead of hashing a label set on every call.
 */
export function childrenByLabel<Value extends string, Child>(
  values: readonly Value[],
  bind: (value: Value) => Child,
): Record<Value, Child> {
  return Object.fromEntries(values.map((value) => [value, bind(value)])) as Record<Value, Child>;
}

/**
 * Children for label values known only at run time (for example a validation
 * rule), bound on first use and then looked up by value. Values come from
 * code, never from callers, so the set stays small.
 */
export class ChildCache<Child> {
  private readonly children = new Map<string, Child>();

  constructor(private readonly bind: (value: string) => Child) {}

  get(value: string): Child {
    let child = this.children.get(value);
    if (!child) {
      child = this.bind(value);
      this.children.set(value, child);
    }
    return child;
  }
}
