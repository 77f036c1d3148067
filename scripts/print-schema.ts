/**
 * Writes schema.graphql from the code (`npm run schema`); a test fails when it drifts. Runs from
 * source (swc), so it works while the codegen output that depends on the schema is still stale.
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { printAppSchema } from '../src/server/schema-printer';

writeFileSync(path.resolve(__dirname, '..', 'schema.graphql'), printAppSchema());
console.log('schema.graphql written');
