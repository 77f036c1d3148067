import { ctesOf, joinSql, raw, readsOf, Sql, sql, withCtes } from './sql';

describe('sql', () => {
  it('puts a placeholder for each value, in order, and splices nested parts with their values', () => {
    const inner = sql`b = ${2} and c = ${'three'}`;
    const { text, params } = sql`select * from t where a = ${1} and ${inner} and d = ${null}`.compile();
    expect(text).toBe('select * from t where a = ? and b = ? and c = ? and d = ?');
    expect(params).toEqual([1, 2, 'three', null]);
  });

  it('puts raw text in as it is, with no value', () => {
    const { text, params } = sql`select ${raw('j.id')} from ${raw('jobs')} j where j.id = ${'x'}`.compile();
    expect(text).toBe('select j.id from jobs j where j.id = ?');
    expect(params).toEqual(['x']);
  });

  it('takes a positional part, and refuses one whose placeholders and values differ', () => {
    const part = Sql.positional('insert into k values (?, ?)', ['a', 'b']);
    expect(sql`with k as (${part}) select ${3}`.compile()).toEqual({
      text: 'with k as (insert into k values (?, ?)) select ?',
      params: ['a', 'b', 3],
    });
    expect(() => Sql.positional('values (?)', [])).toThrow();
  });

  it('composes CTEs of parts in order, and reads what the parts ask to be read', () => {
    const parts = [
      { ctes: [{ name: 'a', sql: sql`select ${1} as n` }] },
      { ctes: [{ name: 'b', sql: raw('select n from a') }], reads: [raw('(select count(*) from b)')] },
    ];
    const { text, params } = withCtes(ctesOf(parts), sql`select a.n${readsOf(parts)} from a`).compile();
    expect(text.replace(/\s+/g, ' ')).toBe(
      'with a as (select ? as n), b as (select n from a) select a.n, (select count(*) from b) from a',
    );
    expect(params).toEqual([1]);
    expect(withCtes([], raw('select 1')).compile().text).toBe('select 1');
    expect(joinSql([], ', ').compile().text).toBe('');
  });
});
