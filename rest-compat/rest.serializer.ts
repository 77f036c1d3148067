import fastJson from 'fast-json-stringify';
import type { JsonSchema } from './schemas';

export type Serializer = (body: unknown) => string;

/**
 * A route's legacy success body as JSON text, by a function compiled once from the route's
 * response schema (fast-json-stringify): it writes each known property directly instead of
 * walking the object as JSON.stringify does. A serializer writes only what its schema names, so
 * each schema must describe the whole body; test/openapi.test.ts checks every answer's text
 * against JSON.stringify of the same body.
 */
export function compileSerializer(schema: JsonSchema, where: string): Serializer {
  assertClosed(schema, where);
  return fastJson(schema) as Serializer;
}

/**
 * An object schema without `additionalProperties` is open in JSON Schema (the OpenAPI document
 * allows anything more) but closed for the serializer, which drops what it does not name: refused.
 */
function assertClosed(s: JsonSchema, where: string): void {
  const types = Array.isArray(s.type) ? (s.type as unknown[]) : [s.type];
  if ((types.includes('object') || s.properties) && s.additionalProperties === undefined)
    throw new Error(`${where}: an object of the response schema must say its additionalProperties`);
  const subschemas = [
    ...Object.values((s.properties ?? {}) as Record<string, JsonSchema>),
    ...[s.additionalProperties, s.items].filter((x): x is JsonSchema => typeof x === 'object'),
    ...((s.anyOf ?? []) as JsonSchema[]),
    ...((s.oneOf ?? []) as JsonSchema[]),
    ...((s.allOf ?? []) as JsonSchema[]),
  ];
  for (const sub of subschemas) assertClosed(sub, where);
}
