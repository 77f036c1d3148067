import { GraphQLScalarType } from 'graphql';
import { GraphQLDateTimeISO } from 'graphql-scalars';
import { isoTime, PgTimeText } from '../common/time';

const base = GraphQLDateTimeISO.toConfig();

/**
 * type-graphql's scalar for Date (graphql-scalars' DateTimeISO: same name, description and
 * parsing), printing Dates with isoTime: a page of jobs prints a hundred of them, and
 * toISOString was the answer's largest single cost after the socket. A list's times kept as
 * PostgreSQL's text (PgTimeText) are cut to the same text without a Date.
 */
export const DateTimeISO = new GraphQLScalarType({
  ...base,
  serialize: (value) =>
    value instanceof Date && !Number.isNaN(value.getTime())
      ? isoTime(value)
      : value instanceof PgTimeText
        ? value.toISOString()
        : base.serialize(value),
});
