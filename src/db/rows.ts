import { createHash } from 'node:crypto';
import { ReferenceKind, type EntityClass } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { types, type Client } from 'pg';
import { cancelAfter, QueryTimeoutError } from './pg-bounds';
import { isUuid } from '../common/ids';
import { PgTimeText, pgTime } from '../common/time';

type Row = Record<string, unknown>;

/** An entity's shape with its times kept as PostgreSQL's text (PgTimeText), for rows only printed. */
export type WithTextTimes<T> = {
  [K in keyof T]: NonNullable<T[K]> extends Date ? PgTimeText | Extract<T[K], null | undefined> : T[K];
};

/**
 * Reads raw rows as plain objects of an entity's shape (read-only: the ORM does not track them),
 * converted as the ORM would (times as Dates, bigints as numbers, many-to-one relations as
 * `{ id }`). For the busiest reads, where the ORM's hydration cost more than the query.
 * `prefix` reads columns named `<prefix><column>` (one entity of a joined row).
 */
export function rowReader<T>(orm: MikroORM, entity: EntityClass<T>, prefix = ''): (row: Row) => T {
  return memo(orm, `read:${entity.name}:${prefix}`, () => buildReader(orm, entity, prefix, pgTime)) as (
    row: Row,
  ) => T;
}

/**
 * rowReader with times kept as PostgreSQL's text (PgTimeText) rather than Dates: for lists whose
 * times are only printed, where reading each into a Date and printing it again was a few percent
 * of the request.
 */
export function textTimesReader<T>(orm: MikroORM, entity: EntityClass<T>): (row: Row) => WithTextTimes<T> {
  return memo(orm, `read-text-times:${entity.name}`, () => buildReader(orm, entity, '', timeText)) as (
    row: Row,
  ) => WithTextTimes<T>;
}
const timeText = (value: unknown) => new PgTimeText(value);

/** Types whose values arrive from the driver as the entity holds them (no conversion needed). */
const AS_IS = new Set([
  'TextType',
  'StringType',
  'UuidType',
  'IntegerType',
  'SmallIntType',
  'BooleanType',
  'DoubleType',
  'FloatType',
  'JsonType',
  'ArrayType',
]);

function buildReader<T>(
  orm: MikroORM,
  entity: EntityClass<T>,
  prefix: string,
  time: (v: unknown) => unknown,
): (row: Row) => T {
  const platform = orm.em.getPlatform();
  const converters: ((v: unknown) => unknown)[] = [];
  const converted = (fn: (v: unknown) => unknown) => `c[${converters.push(fn) - 1}]`;
  const fields = columnProps(orm, entity).map((p) => {
    const value = `r[${JSON.stringify(prefix + p.fieldNames[0])}]`;
    const type = p.customType;
    let read = value;
    if (p.kind === ReferenceKind.MANY_TO_ONE) read = `${value} === null ? null : { id: ${value} }`;
    else if (p.runtimeType === 'Date') read = `${value} == null ? ${value} : ${converted(time)}(${value})`;
    else if (type && !AS_IS.has(type.constructor.name))
      read = `${value} == null ? ${value} : ${converted((v) => type.convertToJSValue(v, platform))}(${value})`;
    return `${JSON.stringify(p.name)}: ${read}`;
  });
  // One object literal of a fixed shape per row (fast to build and to read); the names and
  // columns come from the entity metadata, never from data.
  return new Function('c', `return (r) => ({ ${fields.join(', ')} });`)(converters) as (row: Row) => T;
}

function columnProps<T>(orm: MikroORM, entity: EntityClass<T>) {
  return orm
    .getMetadata()
    .get(entity.name)
    .props.filter((p) => p.fieldNames?.length === 1 && p.persist !== false)
    .filter((p) => p.kind === ReferenceKind.SCALAR || p.kind === ReferenceKind.MANY_TO_ONE);
}

/**
 * The columns of `alias` (a table of the entity) named `<prefix><column>`, for rowReader(.., prefix):
 * those of `props` (entity property names) when given and all of them columns, else every one.
 * The reader leaves the properties of columns not read undefined.
 */
export function prefixedColumns<T>(
  orm: MikroORM,
  entity: EntityClass<T>,
  alias: string,
  prefix: string,
  props: Iterable<string> | null = null,
): string {
  const all = () =>
    memo(orm, `columns:${entity.name}:${alias}:${prefix}`, () => listed(columnProps(orm, entity))) as string;
  const listed = (props: ReturnType<typeof columnProps>) =>
    props.map((p) => `${alias}.${p.fieldNames[0]} as "${prefix}${p.fieldNames[0]}"`).join(', ');
  if (!props) return all();
  // Not memoised: selections vary without bound, and filtering a few dozen properties is cheap.
  const wanted = new Set(props);
  const some = columnProps(orm, entity).filter((p) => wanted.has(p.name));
  return some.length === wanted.size ? listed(some) : all();
}

/** Readers and column lists are built once per ORM (its metadata does not change). */
const built = new WeakMap<MikroORM, Map<string, unknown>>();
function memo(orm: MikroORM, key: string, build: () => unknown): unknown {
  let forOrm = built.get(orm);
  if (!forOrm) built.set(orm, (forOrm = new Map()));
  if (!forOrm.has(key)) forOrm.set(key, build());
  return forOrm.get(key);
}

/** Rows of an entity by id (UUIDs; others match nothing), as plain read-only objects, in one statement. */
export async function readByIds<T>(
  orm: MikroORM,
  entity: EntityClass<T>,
  ids: readonly string[],
): Promise<T[]> {
  const wanted = ids.filter(isUuid);
  if (!wanted.length) return [];
  const table = orm.getMetadata().get(entity.name).tableName;
  const rows = await queryRows(orm.em, `select * from "${table}" where id = any(?::uuid[])`, [
    `{${wanted.join(',')}}`,
  ]);
  return rows.map(rowReader(orm, entity));
}

/**
 * One statement on a connection of the ORM's pool, its values sent as parameters: the ORM's
 * `execute` first writes every value into the SQL text (escaping each) and passes the text
 * through knex, which cost more than a list's or a loader's own query. The ORM's query log
 * still sees it. `?` placeholders, as for the ORM (none may appear in the SQL otherwise).
 *
 * `prepared`: a named prepared statement, parsed and planned once per connection (the planning
 * of the busiest writes, large CTEs, cost more than running them). Only for statements of a
 * bounded set of texts whose result columns are named (no `select *` at the top: a prepared
 * statement whose result shape changes under it fails).
 *
 * `timeoutMs`: the bound of the request's class (lists: LIST_TIMEOUT_MS), under the connection's
 * own; past it the statement is canceled and QueryTimeoutError says so.
 */
export async function queryRows(
  em: EntityManager,
  sql: string,
  values: unknown[],
  prepared = false,
  timeoutMs = 0,
): Promise<Record<string, unknown>[]> {
  const text = numbered(sql);
  em.config.getLogger().logQuery({ query: text, params: values, level: 'info' });
  const client = em.getKnex().client as {
    acquireConnection(): Promise<{
      query(
        query: string | { text: string; values: unknown[]; name: string },
        values?: unknown[],
      ): Promise<{ rows: Record<string, unknown>[] }>;
    }>;
    releaseConnection(connection: unknown): Promise<void>;
  };
  const connection = await client.acquireConnection();
  const bound = cancelAfter(connection as unknown as Client, timeoutMs);
  try {
    // Text and values as two arguments: pg copies a query object given whole (its descriptors).
    const result = prepared
      ? await connection.query({ text, values, name: statementName(text) })
      : await connection.query(text, values);
    return result.rows;
  } catch (err) {
    throw bound.done() ? new QueryTimeoutError(timeoutMs) : err;
  } finally {
    bound.done();
    await client.releaseConnection(connection);
  }
}

/** `?` placeholders as `$1`, `$2`...: a list's few texts come again on every request. */
const numberedTexts = new Map<string, string>();
function numbered(sql: string): string {
  let text = numberedTexts.get(sql);
  if (text === undefined) {
    let n = 0;
    text = sql.replace(/\?/g, () => `$${++n}`);
    if (numberedTexts.size >= 1000) numberedTexts.clear();
    numberedTexts.set(sql, text);
  }
  return text;
}

/** Prepared statements' names, by text: one per text, the same on every connection. */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) statementNames.set(text, (name = `q_${createHash('sha1').update(text).digest('hex')}`));
  return name;
}

/** PostgreSQL's type oid of `text[]`. */
const TEXT_ARRAY_OID = 1009 as Parameters<typeof types.getTypeParser>[0];

/**
 * A reader of `text[]` (tags) as pg's own gives it (`postgres-array`), cheaper for the common
 * form: one dimension, no element quoted (PostgreSQL quotes any element that is empty, holds a
 * quote, backslash, brace, comma or space, or reads NULL), split in one step. Anything else goes
 * to pg's reader. pg's made a parser object and a closure per value and grew its array by push;
 * a list of 50 media reads 50 tag arrays.
 */
export function textArrayParser(fallback: (text: string) => unknown): (text: string) => unknown {
  return (text) => {
    const last = text.length - 1;
    if (
      typeof text !== 'string' ||
      text.charCodeAt(0) !== 123 /* { */ ||
      text.indexOf('}') !== last ||
      text.indexOf('"') !== -1 ||
      text.indexOf('{', 1) !== -1
    )
      return fallback(text);
    if (last === 1) return [];
    const items: (string | null)[] = text.slice(1, last).split(',');
    for (let i = 0; i < items.length; i++) {
      if (items[i] === 'NULL') items[i] = null;
      else if (items[i] === '') return fallback(text); // not PostgreSQL's form; pg's reader skips it
    }
    return items;
  };
}

let textArraysInstalled = false;
/** Installs textArrayParser as pg's reader of `text[]` (process-wide: same values, less garbage). */
export function installTextArrayParser(): void {
  if (textArraysInstalled) return;
  textArraysInstalled = true;
  const fallback = types.getTypeParser(TEXT_ARRAY_OID, 'text') as (text: string) => unknown;
  types.setTypeParser(TEXT_ARRAY_OID, 'text', textArrayParser(fallback));
}

/** A PostgreSQL text[] literal (every element quoted, so commas and braces in tags are data). */
export function textArray(values: string[]): string {
  return `{${values.map((v) => `"${v.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`;
}
