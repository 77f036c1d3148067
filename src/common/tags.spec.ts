import { AppError } from './errors';
import { MAX_TAG_LENGTH, MAX_TAGS, normaliseTags } from './tags';

describe('normaliseTags', () => {
  it('trims, drops empties and duplicates, keeps order', () => {
    expect(normaliseTags([' cat ', '', 'dog', 'cat', '  '])).toEqual(['cat', 'dog']);
  });

  it('splits a comma-separated string', () => {
    expect(normaliseTags('a, b,,c ,a')).toEqual(['a', 'b', 'c']);
  });

  it('treats null and undefined as no tags', () => {
    expect(normaliseTags(undefined)).toEqual([]);
    expect(normaliseTags(null)).toEqual([]);
  });

  it.each([
    ['a non-list', 42],
    ['a list with a number', ['a', 1]],
    ['a too long tag', ['x'.repeat(MAX_TAG_LENGTH + 1)]],
    ['too many tags', Array.from({ length: MAX_TAGS + 1 }, (_, i) => `t${i}`)],
    ['a control character', ['a\nb']],
  ])('refuses %s with VALIDATION_FAILED naming the field', (_what, input) => {
    expect(() => normaliseTags(input, 'labels')).toThrow(AppError);
    try {
      normaliseTags(input, 'labels');
    } catch (err) {
      expect((err as AppError).code).toBe('VALIDATION_FAILED');
      expect((err as AppError).details).toHaveProperty('labels');
    }
  });
});

describe('normaliseTags on huge input', () => {
  it('refuses a list far over the limit before looking at its items', () => {
    // An over-long tag would be reported if the items were read; the count is reported instead.
    const huge = ['x'.repeat(1000), ...Array.from({ length: 100_000 }, (_, i) => `t${i}`)];
    expect(() => normaliseTags(huge)).toThrow(/at most 32 tags/);
  });
});
