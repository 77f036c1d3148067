import { GraphQLScalarType } from 'graphql';
import { GraphQLDateTimeISO } from 'graphql-scalars';
import { isCanonicalIso, isoTime } from '../common/time';

const base = GraphQLDateTimeISO.toConfig();

/**
 * type-graphql's scalar for Date (graphql-scalars' DateTimeISO: same name, description and
 * parsing), printing Dates with isoTime: a page of jobs prints a hundred of them, and
 * toISOString was the answer's largest single cost after the socket. Text already in that form
 * (a list's times read as text, `db/rows.ts`) is printed as it is: parsing and printing it again
 * would give the same text.
 */
export const DateTimeISO = new GraphQLScalarType({
  ...base,
  serialize: (value) =>
    value instanceof Date && !Number.isNaN(value.getTime())
      ? isoTime(value)
      : typeof value === 'string' && isCanonicalIso(value)
        ? value
        : base.serialize(value),
});
