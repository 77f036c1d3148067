import { MAX_JSON_DEPTH, nestsTooDeep, TOO_DEEP } from './json-depth';
import { checkText } from './text';

/** Objects and arrays, alternating, `levels` deep. */
const nested = (levels: number): unknown =>
  JSON.parse('{"a":['.repeat(levels / 2) + (levels % 2 ? '{}' : '1') + ']}'.repeat(levels / 2));

describe('nestsTooDeep', () => {
  it('takes MAX_JSON_DEPTH levels and refuses one more', () => {
    expect(nestsTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestsTooDeep([1, 'x', null, { a: [] }])).toBe(false);
    expect(nestsTooDeep('x')).toBe(false);
  });

  it('walks any depth without recursion', () => {
    expect(nestsTooDeep(nested(200_000))).toBe(true);
  });
});

describe('checkText', () => {
  it('reports a value nested too deep where it is cut, at any depth', () => {
    const reports: string[] = [];
    checkText(nested(200_000), ['input'], (path, problem) => reports.push(`${path.length} ${problem}`));
    expect(reports).toEqual([`${MAX_JSON_DEPTH + 1} ${TOO_DEEP}`]);
    checkText(nested(MAX_JSON_DEPTH), [], () => reports.push('more'));
    expect(reports).toHaveLength(1);
  });
});
