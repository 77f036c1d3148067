/**
 * How deep a JSON value a request carries may nest objects and arrays (`{"a":{"b":1}}` is 2).
 * JSON.parse reads any depth, but the walks after it (the text rule, fingerprints, JSON.stringify)
 * recurse and would overflow the stack; no input the service takes nests beyond a few levels.
 */
export const MAX_JSON_DEPTH = 64;

export const TOO_DEEP = `must not nest objects and arrays deeper than ${MAX_JSON_DEPTH} levels`;

/** Whether a parsed JSON value nests deeper than MAX_JSON_DEPTH; iterative, so any depth is safe. */
export function nestsTooDeep(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length) {
    const v = values.pop()!;
    const depth = depths.pop()!;
    for (const child of Array.isArray(v) ? (v as unknown[]) : Object.values(v)) {
      if (typeof child !== 'object' || child === null) continue;
      if (depth === MAX_JSON_DEPTH) return true;
      values.push(child);
      depths.push(depth + 1);
    }
  }
  return false;
}
