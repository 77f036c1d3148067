import { ReferenceKind, type EntityClass } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';

type Row = Record<string, unknown>;

/** `2026-11-22 10:15:03.123+00` (PostgreSQL's text of a timestamptz in UTC) without Date's slow parser. */
const PG_UTC = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?\+00$/;

/** A timestamptz as the ORM's driver hands it over (text), or a Date, as a Date. */
export function pgTime(value: unknown): Date {
  if (value instanceof Date) return value;
  const m = PG_UTC.exec(value as string);
  if (!m) return new Date(value as string); // another zone or format: the general parser
  const ms = m[7] ? Number(m[7].padEnd(3, '0').slice(0, 3)) : 0;
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], ms));
}

/**
 * Reads raw rows as plain objects of an entity's shape (read-only: the ORM does not track them),
 * converted as the ORM would (times as Dates, bigints as numbers, many-to-one relations as
 * `{ id }`). For the busiest reads, where the ORM's hydration cost more than the query.
 * `prefix` reads columns named `<prefix><column>` (one entity of a joined row).
 */
export function rowReader<T>(orm: MikroORM, entity: EntityClass<T>, prefix = ''): (row: Row) => T {
  return memo(orm, `read:${entity.name}:${prefix}`, () => buildReader(orm, entity, prefix)) as (
    row: Row,
  ) => T;
}

function buildReader<T>(orm: MikroORM, entity: EntityClass<T>, prefix: string): (row: Row) => T {
  const platform = orm.em.getPlatform();
  const columns = columnProps(orm, entity).map((p) => {
    const column = prefix + p.fieldNames[0];
    const type = p.customType;
    const convert: (v: unknown) => unknown =
      p.kind === ReferenceKind.MANY_TO_ONE
        ? (v) => (v === null ? null : { id: v })
        : p.runtimeType === 'Date'
          ? (v) => (v === null || v === undefined ? v : pgTime(v))
          : type
            ? (v) => (v === null || v === undefined ? v : type.convertToJSValue(v, platform))
            : (v) => v;
    return { name: p.name, column, convert };
  });
  return (row) => {
    const out: Row = {};
    for (const c of columns) out[c.name] = c.convert(row[c.column]);
    return out as T;
  };
}

function columnProps<T>(orm: MikroORM, entity: EntityClass<T>) {
  return orm
    .getMetadata()
    .get(entity.name)
    .props.filter((p) => p.fieldNames?.length === 1 && p.persist !== false)
    .filter((p) => p.kind === ReferenceKind.SCALAR || p.kind === ReferenceKind.MANY_TO_ONE);
}

/** The columns of `alias` (a table of the entity) named `<prefix><column>`, for rowReader(.., prefix). */
export function prefixedColumns<T>(
  orm: MikroORM,
  entity: EntityClass<T>,
  alias: string,
  prefix: string,
): string {
  return memo(orm, `columns:${entity.name}:${alias}:${prefix}`, () =>
    columnProps(orm, entity)
      .map((p) => `${alias}.${p.fieldNames[0]} as "${prefix}${p.fieldNames[0]}"`)
      .join(', '),
  ) as string;
}

/** Readers and column lists are built once per ORM (its metadata does not change). */
const built = new WeakMap<MikroORM, Map<string, unknown>>();
function memo(orm: MikroORM, key: string, build: () => unknown): unknown {
  let forOrm = built.get(orm);
  if (!forOrm) built.set(orm, (forOrm = new Map()));
  if (!forOrm.has(key)) forOrm.set(key, build());
  return forOrm.get(key);
}
