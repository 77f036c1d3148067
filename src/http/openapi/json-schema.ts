/**
 * JSON Schema (2020-12, the dialect of OpenAPI 3.1) building blocks for the route table. Every
 * object lists all its properties and forbids others, so a schema is an exact description of
 * the body: the OpenAPI test validates real answers with it.
 */
import { ERROR_CODES } from '../../common/errors';

export type JsonSchema = { [keyword: string]: unknown };

export const string: JsonSchema = { type: 'string' };
export const integer: JsonSchema = { type: 'integer' };
export const number: JsonSchema = { type: 'number' };
export const boolean: JsonSchema = { type: 'boolean' };
/** Any JSON value. */
export const anything: JsonSchema = {};
export const uuid: JsonSchema = { type: 'string', format: 'uuid' };
export const url: JsonSchema = { type: 'string', format: 'uri' };
/** ISO 8601 with a zone (`2026-11-22T10:15:03.123Z`). */
export const isoTime: JsonSchema = { type: 'string', format: 'date-time' };
/** The legacy text form of times: Go's default format in UTC (`2026-11-22 10:15:03.12 +0000 UTC`). */
export const goTimeText: JsonSchema = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})? \\+0000 UTC$',
};
/** A decimal number as a string (money and quantities keep their precision). */
export const decimal: JsonSchema = { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' };

/** One of these strings. */
export function enumOf(values: readonly string[]): JsonSchema {
  return { type: 'string', enum: values };
}

/** The same value or null. */
export function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.type !== 'string') return { anyOf: [schema, { type: 'null' }] };
  // An enum must list null too, or it refuses what the type allows.
  return Array.isArray(schema.enum)
    ? { ...schema, type: [schema.type, 'null'], enum: [...schema.enum, null] }
    : { ...schema, type: [schema.type, 'null'] };
}

export function arrayOf(items: JsonSchema): JsonSchema {
  return { type: 'array', items };
}

/** An object with exactly these properties; all required except those named `optional`. */
export function object(properties: Record<string, JsonSchema>, optional: string[] = []): JsonSchema {
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    additionalProperties: false,
  };
}

/** A map from names to values of one schema. */
export function mapOf(values: JsonSchema): JsonSchema {
  return { type: 'object', additionalProperties: values };
}

/** A JSON request body: the properties a route reads; others are ignored, so they are allowed. */
export function requestBody(properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema {
  return { type: 'object', properties, required };
}

/** `{"message": "..."}`. */
export const message: JsonSchema = object({ message: string });

/** The error body of every REST answer that is not a success. */
export const errorBody: JsonSchema = object({
  error: object(
    {
      code: enumOf(ERROR_CODES),
      message: string,
      details: mapOf(string),
      request_id: string,
    },
    ['details', 'request_id'],
  ),
});
