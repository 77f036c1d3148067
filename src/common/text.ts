import { MAX_JSON_DEPTH, TOO_DEEP } from './json-depth';

// eslint-disable-next-line no-control-regex -- NUL is what is refused
const NUL = /\u0000/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * What is wrong with a string as text the service stores, or null: PostgreSQL cannot store NUL,
 * and a lone surrogate is not Unicode text (it would be stored as U+FFFD, silently changed).
 */
export function textProblem(s: string): string | null {
  if (NUL.test(s)) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(s)) return 'must be valid Unicode text (it holds a lone surrogate)';
  return null;
}

export type TextReport = (path: readonly (string | number)[], problem: string) => void;

/**
 * Reports every string of a value of any shape (object keys included) that textProblem refuses,
 * and a value nested deeper than MAX_JSON_DEPTH (where it is cut: the walk recurses).
 */
export function checkText(value: unknown, path: (string | number)[], report: TextReport, depth = 0): void {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    if (problem) report(path, problem);
  } else if (value && typeof value === 'object' && depth === MAX_JSON_DEPTH) {
    report(path, TOO_DEEP);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => checkText(item, [...path, i], report, depth + 1));
  } else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      const problem = textProblem(key);
      if (problem) report([...path, key], problem);
      checkText(v, [...path, key], report, depth + 1);
    }
  }
}
