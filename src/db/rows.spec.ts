import { types } from 'pg';
import { textArrayParser } from './rows';

// pg's own reader of text[] (postgres-array), as the service had it before.
const pgReader = types.getTypeParser(1009 as Parameters<typeof types.getTypeParser>[0], 'text') as (
  text: string,
) => unknown;
const parse = textArrayParser(pgReader);

/** PostgreSQL's output form of a one-dimensional text[] (array_out's quoting rules). */
function pgText(items: (string | null)[]): string {
  const quoted = (s: string) => `"${s.replace(/["\\]/g, (c) => `\\${c}`)}"`;
  const needsQuotes = (s: string) => s === '' || /^null$/i.test(s) || /[{}",\\\s]/.test(s);
  return `{${items.map((s) => (s === null ? 'NULL' : needsQuotes(s) ? quoted(s) : s)).join(',')}}`;
}

describe('textArrayParser', () => {
  it('reads what pg reads, for the forms PostgreSQL prints', () => {
    const cases: (string | null)[][] = [
      [],
      ['bench'],
      ['tag3', 'bench'],
      ['NULL', null, 'null', 'Null'],
      [null],
      ['', 'a'],
      ['a b', 'c,d', 'e"f', 'g\\h', '{x}', 'ünïcødé', '日本'],
      ['a=b', '[1:2]', '-', "it's"],
    ];
    const alphabet = ['a', 'Z', '0', ' ', ',', '"', '\\', '{', '}', 'N', 'U', 'L', 'é', '=', '['];
    let seed = 7;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 3000; i++)
      cases.push(
        Array.from({ length: random(5) }, () =>
          random(8) === 0
            ? null
            : Array.from({ length: random(6) }, () => alphabet[random(alphabet.length)]).join(''),
        ),
      );
    for (const items of cases) {
      const text = pgText(items);
      expect(parse(text)).toEqual(pgReader(text));
      expect(parse(text)).toEqual(items);
    }
  });

  it('leaves other forms to pg: several dimensions, bounds, and text PostgreSQL does not print', () => {
    for (const text of ['{{a,b},{c,d}}', '[0:1]={a,b}', '{a,,b}', '{a,}', '{,a}', '{}', '{NULL}'])
      expect(parse(text)).toEqual(pgReader(text));
    expect(() => parse('{a')).toThrow();
  });
});
