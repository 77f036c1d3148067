import { lexicographicSortSchema, printSchema } from 'graphql';
import { buildAppSchema } from './schema';

export function printAppSchema(): string {
  return `# Generated from the code by \`npm run schema\`. Do not edit.\n\n${printSchema(lexicographicSortSchema(buildAppSchema()))}\n`;
}
