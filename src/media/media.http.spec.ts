import { parseRange } from './media.routes';

describe('parseRange', () => {
  it.each([
    ['bytes=0-9', { start: 0, end: 9 }],
    ['bytes=5-', { start: 5, end: 99 }],
    ['bytes=-10', { start: 90, end: 99 }],
    ['bytes=-1000', { start: 0, end: 99 }],
    ['bytes=90-1000', { start: 90, end: 99 }],
  ])('reads %s of a 100-byte file', (header, range) => {
    expect(parseRange(header, 100)).toEqual(range);
  });

  it.each([['bytes=100-'], ['bytes=50-40'], ['bytes=-0']])('finds %s unsatisfiable', (header) => {
    expect(parseRange(header, 100)).toBe('unsatisfiable');
  });

  it.each([[undefined], ['items=0-5'], ['bytes=0-1,5-6'], ['bytes=-'], ['bytes=a-b']])(
    'serves the whole file for %s',
    (header) => {
      expect(parseRange(header, 100)).toBeNull();
    },
  );
});
