import { createHash } from 'node:crypto';
import { ReferenceKind, type EntityClass } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { isUuid } from '../common/ids';
import { isoTime } from '../common/time';

type Row = Record<string, unknown>;

/**
 * A timestamptz as the ORM's driver hands it over (text), or a Date, as a Date. PostgreSQL's text
 * in UTC (`2026-11-22 10:15:03.123456+00`, the fraction optional) is read by position, without
 * Date's general parser (a list reads hundreds of times per page); anything else goes to it.
 */
export function pgTime(value: unknown): Date {
  if (value instanceof Date) return value;
  const s = value as string;
  const n = s.length;
  if (
    n < 22 ||
    s.charCodeAt(n - 3) !== 43 /* + */ ||
    s.charCodeAt(n - 2) !== 48 ||
    s.charCodeAt(n - 1) !== 48
  )
    return new Date(s);
  const num = (from: number, to: number) => {
    let v = 0;
    for (let i = from; i < to; i++) v = v * 10 + s.charCodeAt(i) - 48;
    return v;
  };
  const ms = n > 23 ? num(20, Math.min(n - 3, 23)) * 10 ** (3 - (Math.min(n - 3, 23) - 20)) : 0;
  const year = num(0, 4);
  const date = new Date(Date.UTC(year, num(5, 7) - 1, num(8, 10), num(11, 13), num(14, 16), num(17, 19), ms));
  if (year < 100) date.setUTCFullYear(year); // Date.UTC takes years 0 to 99 as 1900 to 1999
  return date;
}

/** PostgreSQL's UTC text, `YYYY-MM-DD HH:MM:SS` then an optional fraction of 1 to 6 digits, `+00`. */
function isPgUtc(s: string): boolean {
  const n = s.length;
  if (n !== 22 && (n < 24 || n > 29)) return false;
  if (s.charCodeAt(n - 3) !== 43 /* + */ || s.charCodeAt(n - 2) !== 48 || s.charCodeAt(n - 1) !== 48)
    return false;
  for (let i = 0; i < n - 3; i++) {
    const c = s.charCodeAt(i);
    const want = i < 19 ? PG_SHAPE.charCodeAt(i) : i === 19 ? 46 /* . */ : 57;
    if (want === 57 ? c < 48 || c > 57 : c !== want) return false;
  }
  return true;
}
const PG_SHAPE = '9999-99-99 99:99:99';

/**
 * A timestamptz's ISO text (what the DateTime scalar and isoTime print: `pgTime`'s Date printed
 * by toISOString), cut from PostgreSQL's UTC text without a Date: the fraction cut or padded to
 * milliseconds, as the Date keeps it. Any other form goes through the Date.
 */
export function pgIsoTime(value: unknown): string {
  if (typeof value !== 'string' || !isPgUtc(value)) return isoTime(pgTime(value));
  const fraction =
    value.length === 22 ? '000' : value.slice(20, Math.min(value.length - 3, 23)).padEnd(3, '0');
  return `${value.slice(0, 10)}T${value.slice(11, 19)}.${fraction}Z`;
}

/** An entity's shape with its times as ISO text (`pgIsoTime`), for rows only printed. */
export type WithIsoTimes<T> = {
  [K in keyof T]: NonNullable<T[K]> extends Date ? string | Extract<T[K], null | undefined> : T[K];
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
 * rowReader with times as ISO text rather than Dates (`pgIsoTime`): for lists whose times are
 * only printed, where reading each into a Date and printing it again was a few percent of the
 * request.
 */
export function isoRowReader<T>(orm: MikroORM, entity: EntityClass<T>): (row: Row) => WithIsoTimes<T> {
  return memo(orm, `read-iso:${entity.name}`, () => buildReader(orm, entity, '', pgIsoTime)) as (
    row: Row,
  ) => WithIsoTimes<T>;
}

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
 */
export async function queryRows(
  em: EntityManager,
  sql: string,
  values: unknown[],
  prepared = false,
): Promise<Record<string, unknown>[]> {
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  em.config.getLogger().logQuery({ query: text, params: values, level: 'info' });
  const client = em.getKnex().client as {
    acquireConnection(): Promise<{
      query(query: {
        text: string;
        values: unknown[];
        name?: string;
      }): Promise<{ rows: Record<string, unknown>[] }>;
    }>;
    releaseConnection(connection: unknown): Promise<void>;
  };
  const connection = await client.acquireConnection();
  try {
    return (await connection.query({ text, values, name: prepared ? statementName(text) : undefined })).rows;
  } finally {
    await client.releaseConnection(connection);
  }
}

/** Prepared statements' names, by text: one per text, the same on every connection. */
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) statementNames.set(text, (name = `q_${createHash('sha1').update(text).digest('hex')}`));
  return name;
}
