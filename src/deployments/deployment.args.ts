import { AppError, type ErrorDetails } from '../common/errors';
import { isUuid } from '../common/ids';
import type { ModelArgument } from '../models/model.entity';
import type { ArgValue } from './deployment.entity';

/** Bounds on what one argument may carry into a command line. */
export const MAX_STRING = 4096;
export const MAX_ARRAY = 100;

export interface CheckedArgs {
  values: Record<string, ArgValue>;
  /** File arguments in the model's order: argument name -> media id. */
  files: { name: string; mediaId: string }[];
}

const INT = /^-?\d{1,15}$/;
const FLOAT = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/**
 * Checks a deployment's arguments against the model's definitions: known names only, required
 * unless optional, the right type, within min/max. Every problem is reported at once, keyed
 * `args.<name>`. File values are media ids here; ownership is checked by the caller.
 */
export function checkArgs(defs: readonly ModelArgument[], input: unknown): CheckedArgs {
  if (input === undefined || input === null) input = {};
  if (typeof input !== 'object' || Array.isArray(input))
    throw AppError.validation({ args: 'must be an object of argument values' });
  const given = input as Record<string, unknown>;
  const problems: ErrorDetails = {};
  const known = new Set(defs.map((d) => d.name));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) problems[`args.${name}`] = 'is not an argument of this model';
  }
  const values: Record<string, ArgValue> = {};
  const files: CheckedArgs['files'] = [];
  for (const def of defs) {
    const raw = Object.hasOwn(given, def.name) ? given[def.name] : undefined;
    if (raw === undefined || raw === null) {
      if (!def.optional) problems[`args.${def.name}`] = 'is required';
      continue;
    }
    const checked = checkOne(def, raw);
    if (typeof checked === 'object' && 'problem' in checked) {
      problems[`args.${def.name}`] = checked.problem;
      continue;
    }
    values[def.name] = checked;
    if (def.type === 'file') files.push({ name: def.name, mediaId: checked as string });
  }
  if (Object.keys(problems).length) throw AppError.validation(problems);
  return { values, files };
}

type Checked = ArgValue | { problem: string };

function checkOne(def: ModelArgument, raw: unknown): Checked {
  switch (def.type) {
    case 'int':
    case 'float':
      return checkNumber(def, raw);
    case 'string': {
      const v = checkString(raw);
      if (typeof v === 'string' && def.choices && !def.choices.includes(v))
        return { problem: `must be one of ${def.choices.join(', ')}` };
      return v;
    }
    case 'file':
      return isUuid(raw) ? raw.toLowerCase() : { problem: 'must be the id of one of your media assets' };
    case 'array': {
      if (!Array.isArray(raw)) return { problem: 'must be a list' };
      if (raw.length > MAX_ARRAY) return { problem: `may have at most ${MAX_ARRAY} items` };
      const items: (string | number)[] = [];
      for (const item of raw) {
        const v = typeof item === 'number' && Number.isFinite(item) ? item : checkString(item);
        if (typeof v === 'object') return { problem: `items ${v.problem.replace(/^must/, 'must each')}` };
        items.push(v);
      }
      return items;
    }
  }
}

function checkNumber(def: ModelArgument, raw: unknown): Checked {
  const integer = def.type === 'int';
  let n: number;
  if (typeof raw === 'number') n = raw;
  else if (typeof raw === 'string' && (integer ? INT : FLOAT).test(raw.trim())) n = Number(raw.trim());
  else return { problem: integer ? 'must be an integer' : 'must be a number' };
  if (!Number.isFinite(n) || (integer && !Number.isSafeInteger(n)))
    return { problem: integer ? 'must be an integer' : 'must be a finite number' };
  if (def.min !== null && n < def.min) return { problem: `must be at least ${def.min}` };
  if (def.max !== null && n > def.max) return { problem: `must be at most ${def.max}` };
  return n;
}

function checkString(raw: unknown): string | { problem: string } {
  if (typeof raw !== 'string') return { problem: 'must be a string' };
  if (raw.length > MAX_STRING) return { problem: `must have at most ${MAX_STRING} characters` };
  // A NUL cannot be part of a command-line argument.
  if (raw.includes('\0')) return { problem: 'must not contain NUL characters' };
  return raw;
}
