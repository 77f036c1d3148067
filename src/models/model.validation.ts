import { splitWords } from './model.command';
import { AppError, type ErrorDetails } from '../common/errors';
import { MACHINE_TYPE_NAME, type MachineTypes } from '../common/machine-types';
import { isUuid } from '../common/ids';
import { normaliseTags } from '../common/tags';
import { secretNameProblem } from '../secrets/secret.names';
import type { Model, ModelArgument, ModelArgumentKind, ModelVisibility } from './model.entity';

/** The fields of a model its owner defines; everything else is the service's. */
export type ModelDefinition = Pick<
  Model,
  | 'name'
  | 'version'
  | 'description'
  | 'container'
  | 'command'
  | 'machineType'
  | 'machineCount'
  | 'args'
  | 'tags'
  | 'blackIcon'
  | 'whiteIcon'
  | 'colorIcon'
  | 'exampleOutputs'
  | 'timeoutSeconds'
  | 'maxRetries'
  | 'visibility'
  | 'sharedWith'
  | 'secrets'
>;

export interface ModelArgumentInput {
  name: string;
  type: string;
  format: string;
  description?: string | null;
  example?: string | null;
  optional?: boolean | null;
  tags?: string[] | null;
  min?: number | null;
  max?: number | null;
  choices?: string[] | null;
}

/**
 * A definition as a client sends it. On create, absent fields take their defaults; on update,
 * absent fields keep their value and `null` resets a field to its default.
 */
export type ModelDefinitionInput = {
  [K in Exclude<keyof ModelDefinition, 'args' | 'visibility'>]?: ModelDefinition[K] | null;
} & { args?: ModelArgumentInput[] | null; visibility?: string | null };

export const VISIBILITIES: readonly ModelVisibility[] = ['public', 'private'];
export const ARGUMENT_KINDS: readonly ModelArgumentKind[] = ['int', 'float', 'string', 'file', 'array'];
/** Machine types every executor understands; others are passed through to the cluster manager. */
export const KNOWN_MACHINE_TYPES = ['cpu', 'gpu'] as const;

export const LIMITS = {
  name: 200,
  version: 64,
  description: 10_000,
  container: 512,
  command: 4096,
  url: 2048,
  exampleOutputs: 32,
  args: 64,
  argFormat: 512,
  argDescription: 2000,
  argExample: 1000,
  argChoices: 100,
  argChoice: 200,
  machineCount: 64,
  timeoutSeconds: 86_400,
  maxRetries: 10,
  sharedWith: 50,
  secrets: 32,
} as const;

const DEFAULTS: Omit<ModelDefinition, 'name' | 'container' | 'args'> = {
  version: '',
  description: null,
  command: '{args}',
  machineType: 'cpu',
  machineCount: 1,
  tags: [],
  blackIcon: null,
  whiteIcon: null,
  colorIcon: null,
  exampleOutputs: [],
  timeoutSeconds: 3600,
  maxRetries: 0,
  visibility: 'public',
  sharedWith: [],
  secrets: [],
};

const ARGUMENT_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
/** Containers of the service's own models: their programs run as the service's own. */
const BUILTIN_CONTAINER = 'builtin/';
// eslint-disable-next-line no-control-regex -- control characters are what we refuse
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** Collects every problem of a definition, so one answer names them all. */
class Checker {
  readonly errors: ErrorDetails = {};

  fail(field: string, message: string): undefined {
    this.errors[field] ??= message;
    return undefined;
  }

  text(field: string, value: string, max: number, opts: { required?: boolean } = {}): string | undefined {
    const v = value.trim();
    if (opts.required && !v) return this.fail(field, 'is required');
    if (v.length > max) return this.fail(field, `must be at most ${max} characters`);
    if (CONTROL.test(v)) return this.fail(field, 'must not contain control characters');
    return v;
  }

  int(field: string, value: number, min: number, max: number): number | undefined {
    if (!Number.isInteger(value) || value < min || value > max)
      return this.fail(field, `must be an integer between ${min} and ${max}`);
    return value;
  }

  url(field: string, value: string): string | undefined {
    const v = value.trim();
    if (v.length > LIMITS.url) return this.fail(field, `must be at most ${LIMITS.url} characters`);
    try {
      if (['http:', 'https:'].includes(new URL(v).protocol)) return v;
    } catch {
      // reported below
    }
    return this.fail(field, 'must be an http(s) URL');
  }

  tags(field: string, value: unknown): string[] | undefined {
    try {
      return normaliseTags(value, field);
    } catch (err) {
      if (!(err instanceof AppError) || !err.details) throw err;
      return this.fail(field, Object.values(err.details)[0]);
    }
  }
}

function checkArgument(c: Checker, input: ModelArgumentInput, index: number): ModelArgument | undefined {
  if (typeof input.name !== 'string' || !ARGUMENT_NAME.test(input.name))
    return c.fail(
      `args[${index}].name`,
      'must start with a letter or _ and use only letters, digits, _ and - (at most 64)',
    );
  const at = (field: string) => `args.${input.name}.${field}`;
  const kind = input.type as ModelArgumentKind;
  if (!ARGUMENT_KINDS.includes(kind)) c.fail(at('type'), `must be one of ${ARGUMENT_KINDS.join(', ')}`);
  const format = c.text(at('format'), input.format ?? '', LIMITS.argFormat, { required: true });
  if (format !== undefined && !format.includes(':value')) c.fail(at('format'), 'must contain :value');
  else if (format !== undefined && wordsOf(format) === null) c.fail(at('format'), 'has an unclosed quote');
  const description = c.text(at('description'), input.description ?? '', LIMITS.argDescription);
  const example = c.text(at('example'), input.example ?? '', LIMITS.argExample);
  const tags = input.tags === undefined || input.tags === null ? null : c.tags(at('tags'), input.tags);
  const min = input.min ?? null;
  const max = input.max ?? null;
  for (const [field, bound] of [
    ['min', min],
    ['max', max],
  ] as const) {
    if (bound === null) continue;
    if (kind !== 'int' && kind !== 'float') c.fail(at(field), 'only int and float arguments have bounds');
    else if (!Number.isFinite(bound) || (kind === 'int' && !Number.isInteger(bound)))
      c.fail(at(field), `must be ${kind === 'int' ? 'an integer' : 'a finite number'}`);
  }
  if (min !== null && max !== null && min > max) c.fail(at('min'), 'must not exceed max');
  if (example && (kind === 'int' || kind === 'float')) {
    const n = Number(example);
    if (!Number.isFinite(n) || (kind === 'int' && !Number.isInteger(n)))
      c.fail(at('example'), `must be ${kind === 'int' ? 'an integer' : 'a number'}`);
    else if ((min !== null && n < min) || (max !== null && n > max))
      c.fail(at('example'), 'must lie within min and max');
  }
  const choices = checkChoices(c, at('choices'), kind, input.choices ?? null);
  if (choices && example && !choices.includes(example)) c.fail(at('example'), 'must be one of the choices');
  return {
    name: input.name,
    type: kind,
    format: format ?? '',
    description: description || null,
    example: example || null,
    optional: input.optional ?? false,
    tags: tags ?? null,
    min,
    max,
    choices,
  };
}

/** A string argument's fixed set of values: distinct, non-empty, without control characters. */
function checkChoices(
  c: Checker,
  field: string,
  kind: ModelArgumentKind,
  input: string[] | null,
): string[] | null {
  if (input === null) return null;
  if (kind !== 'string') return c.fail(field, 'only string arguments have choices') ?? null;
  if (input.length === 0 || input.length > LIMITS.argChoices)
    return c.fail(field, `must list 1 to ${LIMITS.argChoices} values`) ?? null;
  const out: string[] = [];
  for (const raw of input) {
    const v = c.text(field, raw, LIMITS.argChoice, { required: true });
    if (v === undefined) return null;
    if (out.includes(v)) return c.fail(field, `lists ${v} twice`) ?? null;
    out.push(v);
  }
  return out;
}

function checkArguments(c: Checker, input: ModelArgumentInput[]): ModelArgument[] {
  if (input.length > LIMITS.args) c.fail('args', `at most ${LIMITS.args} arguments`);
  const seen = new Set<string>();
  const args: ModelArgument[] = [];
  input.forEach((raw, i) => {
    if (seen.has(raw.name)) c.fail(`args.${raw.name}`, 'is defined twice');
    seen.add(raw.name);
    const arg = checkArgument(c, raw, i);
    if (arg) args.push(arg);
  });
  return args;
}

/** Team ids, lower-cased and without repeats; whether the teams exist is the service's to check. */
function checkTeams(c: Checker, ids: unknown[]): string[] {
  if (ids.length > LIMITS.sharedWith) c.fail('sharedWith', `at most ${LIMITS.sharedWith} teams`);
  ids.forEach((id, i) => {
    if (!isUuid(id)) c.fail(`sharedWith[${i}]`, 'must be a team id (a UUID)');
  });
  return [...new Set(ids.filter(isUuid).map((id) => id.toLowerCase()))];
}

/** Names of the owner's secrets the model's jobs get, in the order given. */
function checkSecretNames(c: Checker, names: unknown[]): string[] {
  if (names.length > LIMITS.secrets) c.fail('secrets', `at most ${LIMITS.secrets} secrets`);
  const seen = new Set<string>();
  names.forEach((name, i) => {
    const problem = secretNameProblem(name);
    if (problem) c.fail(`secrets[${i}]`, problem);
    else if (seen.has(name as string)) c.fail(`secrets[${i}]`, 'is named twice');
    seen.add(name as string);
  });
  return [...seen];
}

/** What a definition is checked against besides its own fields. */
export interface DefinitionRules {
  /** MACHINE_TYPES_FILE's machine types: a model must name one of them. Null: any name. */
  machineTypes?: MachineTypes | null;
  /** The service's own models (seeded), which alone may use `builtin/` containers. */
  builtin?: boolean;
}

/**
 * Validates a definition against `current` (defaults on create). Every problem is reported at
 * once as VALIDATION_FAILED, keyed by field; argument problems by `args.<name>.<field>`.
 */
export function checkDefinition(
  input: ModelDefinitionInput,
  current?: ModelDefinition,
  rules: DefinitionRules = {},
): ModelDefinition {
  const c = new Checker();
  const out: ModelDefinition = current ? { ...current } : { ...DEFAULTS, name: '', container: '', args: [] };
  // Absent keeps the current value (on create: the default); null resets to the default.
  const given = <K extends keyof ModelDefinitionInput>(k: K) => input[k] !== undefined;

  if (given('name') || !current)
    out.name = c.text('name', input.name ?? '', LIMITS.name, { required: true }) ?? '';
  if (given('container') || !current) {
    const v = c.text('container', input.container ?? '', LIMITS.container, { required: true });
    if (v !== undefined && /\s/.test(v)) c.fail('container', 'must not contain whitespace');
    else if (v?.startsWith(BUILTIN_CONTAINER) && !rules.builtin)
      c.fail('container', `${BUILTIN_CONTAINER}... names the service's own containers`);
    out.container = v ?? '';
  }
  if (given('args') || !current) {
    if (!input.args) c.fail('args', 'is required');
    else out.args = checkArguments(c, input.args);
  }
  if (given('version')) out.version = c.text('version', input.version ?? '', LIMITS.version) ?? '';
  if (given('description'))
    out.description = c.text('description', input.description ?? '', LIMITS.description) || null;
  if (given('command')) {
    out.command = c.text('command', input.command ?? DEFAULTS.command, LIMITS.command) ?? '';
    const words = wordsOf(out.command);
    if (words === null) c.fail('command', 'has an unclosed quote');
    else if (words.filter((w) => w === '{args}').length !== 1 || out.command.split('{args}').length !== 2)
      c.fail('command', 'must contain {args} exactly once, as a word of its own');
  }
  if (given('machineType')) {
    out.machineType = input.machineType?.trim() || DEFAULTS.machineType;
    if (!MACHINE_TYPE_NAME.test(out.machineType))
      c.fail('machineType', `must be ${KNOWN_MACHINE_TYPES.join(', ')} or an executor's machine type name`);
  }
  const types = rules.machineTypes;
  if (types && (given('machineType') || !current) && !types.has(out.machineType))
    c.fail(
      'machineType',
      `must be one of the machine types of this service: ${[...types.keys()].join(', ')}`,
    );
  if (given('machineCount'))
    out.machineCount =
      c.int('machineCount', input.machineCount ?? DEFAULTS.machineCount, 1, LIMITS.machineCount) ?? 1;
  if (given('timeoutSeconds'))
    out.timeoutSeconds =
      c.int('timeoutSeconds', input.timeoutSeconds ?? DEFAULTS.timeoutSeconds, 1, LIMITS.timeoutSeconds) ?? 1;
  if (given('maxRetries'))
    out.maxRetries = c.int('maxRetries', input.maxRetries ?? DEFAULTS.maxRetries, 0, LIMITS.maxRetries) ?? 0;
  if (given('tags')) out.tags = c.tags('tags', input.tags) ?? [];
  for (const icon of ['blackIcon', 'whiteIcon', 'colorIcon'] as const) {
    const v = input[icon];
    if (v !== undefined) out[icon] = v === null || v.trim() === '' ? null : (c.url(icon, v) ?? null);
  }
  if (given('exampleOutputs')) {
    const list = input.exampleOutputs ?? [];
    if (list.length > LIMITS.exampleOutputs)
      c.fail('exampleOutputs', `at most ${LIMITS.exampleOutputs} URLs`);
    out.exampleOutputs = list.map((u, i) => c.url(`exampleOutputs[${i}]`, u) ?? '');
  }
  if (given('visibility')) {
    const v = (input.visibility ?? DEFAULTS.visibility) as ModelVisibility;
    if (!VISIBILITIES.includes(v)) c.fail('visibility', `must be one of ${VISIBILITIES.join(', ')}`);
    else out.visibility = v;
  }
  if (given('sharedWith')) out.sharedWith = checkTeams(c, input.sharedWith ?? []);
  if (given('secrets')) out.secrets = checkSecretNames(c, input.secrets ?? []);
  if (Object.keys(c.errors).length) throw AppError.validation(c.errors);
  return out;
}

/**
 * The class shown as `classification`. The legacy service showed only `fast`; every machine type
 * maps to it until a slower class is introduced for some machine type.
 */
export function classificationOf(_machineType: string): string {
  return 'fast';
}

/** The command-line words of a template (see splitWords), or null when it cannot be split. */
function wordsOf(template: string): string[] | null {
  try {
    return splitWords(template);
  } catch {
    return null;
  }
}
