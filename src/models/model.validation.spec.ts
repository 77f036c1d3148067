import { AppError } from '../common/errors';
import { BUILTIN_MODELS } from './model.seed';
import { checkDefinition, classificationOf, type ModelDefinitionInput } from './model.validation';

const minimal: ModelDefinitionInput = {
  name: ' Echo ',
  container: 'echo:1',
  args: [{ name: 'text', type: 'string', format: '--text=:value', tags: [' a ', 'a', 'b'] }],
};

function problems(input: ModelDefinitionInput, current?: ReturnType<typeof checkDefinition>) {
  try {
    checkDefinition(input, current);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('VALIDATION_FAILED');
    return (err as AppError).details;
  }
  throw new Error('expected VALIDATION_FAILED');
}

describe('checkDefinition', () => {
  it('fills the defaults on create and normalises text and tags', () => {
    expect(checkDefinition(minimal)).toEqual({
      name: 'Echo',
      container: 'echo:1',
      version: '',
      description: null,
      command: '{args}',
      machineType: 'cpu',
      machineCount: 1,
      timeoutSeconds: 3600,
      maxRetries: 0,
      tags: [],
      blackIcon: null,
      whiteIcon: null,
      colorIcon: null,
      exampleOutputs: [],
      visibility: 'public',
      sharedWith: [],
      secrets: [],
      args: [
        {
          name: 'text',
          type: 'string',
          format: '--text=:value',
          choices: null,
          description: null,
          example: null,
          optional: false,
          tags: ['a', 'b'],
          min: null,
          max: null,
        },
      ],
    });
  });

  it('on update keeps absent fields, resets null ones to their default and keeps required ones required', () => {
    const current = checkDefinition({ ...minimal, machineType: 'gpu', description: 'd', timeoutSeconds: 60 });
    const updated = checkDefinition({ version: '2', machineType: null, description: null }, current);
    expect(updated).toEqual({ ...current, version: '2', machineType: 'cpu', description: null });
    expect(problems({ name: null, container: null, args: null }, current)).toEqual({
      name: 'is required',
      container: 'is required',
      args: 'is required',
    });
  });

  it('reports every problem at once, arguments by name', () => {
    expect(
      problems({
        ...minimal,
        command: 'no placeholder',
        args: [
          { name: 'n', type: 'int', format: ':value', min: 2, max: 1 },
          { name: 'f', type: 'float', format: ':value', min: Number.NaN },
          { name: '9lives', type: 'int', format: ':value' },
          { name: 'e', type: 'int', format: ':value', example: '1.5' },
          { name: 'r', type: 'float', format: ':value', max: 1, example: '2' },
        ],
      }),
    ).toEqual({
      command: 'must contain {args} exactly once, as a word of its own',
      'args.n.min': 'must not exceed max',
      'args.f.min': 'must be a finite number',
      'args[2].name': expect.stringContaining('must start with a letter'),
      'args.e.example': 'must be an integer',
      'args.r.example': 'must lie within min and max',
    });
  });

  it('accepts float bounds and an array argument', () => {
    const def = checkDefinition({
      ...minimal,
      args: [
        { name: 'ratio', type: 'float', format: '--r=:value', min: 0, max: 0.5 },
        { name: 'items', type: 'array', format: ':value' },
      ],
    });
    expect(def.args.map((a) => [a.name, a.min, a.max])).toEqual([
      ['ratio', 0, 0.5],
      ['items', null, null],
    ]);
  });

  it('keeps the choices of a string argument, trimmed; refuses them elsewhere, empty or repeated', () => {
    const def = checkDefinition({
      ...minimal,
      args: [
        { name: 'format', type: 'string', format: ':value', choices: [' png', 'jpeg '], example: 'png' },
      ],
    });
    expect(def.args[0].choices).toEqual(['png', 'jpeg']);
    expect(
      problems({
        ...minimal,
        args: [
          { name: 'n', type: 'int', format: ':value', choices: ['1'] },
          { name: 'e', type: 'string', format: ':value', choices: [] },
          { name: 't', type: 'string', format: ':value', choices: ['a', 'a'] },
          { name: 'x', type: 'string', format: ':value', choices: ['a', 'b'], example: 'c' },
        ],
      }),
    ).toEqual({
      'args.n.choices': 'only string arguments have choices',
      'args.e.choices': 'must list 1 to 100 values',
      'args.t.choices': 'lists a twice',
      'args.x.example': 'must be one of the choices',
    });
  });
});

describe('built-in models', () => {
  it('are valid definitions with unique ids', () => {
    for (const { id: _id, ...input } of BUILTIN_MODELS)
      expect(() => checkDefinition(input, undefined, { builtin: true })).not.toThrow();
    expect(new Set(BUILTIN_MODELS.map((m) => m.id)).size).toBe(BUILTIN_MODELS.length);
  });

  it("alone use the service's own builtin/ containers", () => {
    const { id: _id, ...input } = BUILTIN_MODELS[0];
    expect(() => checkDefinition(input)).toThrow(/builtin\/\.\.\. names the service's own containers/);
  });
});

describe('machine types', () => {
  const types = new Map([
    ['a100', { slurm: { partition: 'gpu' } }],
    ['cpu', {}],
  ]);
  const input = { name: 'm', container: 'c', args: [], machineType: 'h100' };

  it('must be defined when MACHINE_TYPES_FILE names them, on create and when changed', () => {
    expect(() => checkDefinition(input, undefined, { machineTypes: types })).toThrow(
      expect.objectContaining({
        code: 'VALIDATION_FAILED',
        details: { machineType: 'must be one of the machine types of this service: a100, cpu' },
      }),
    );
    const current = checkDefinition({ ...input, machineType: 'a100' }, undefined, { machineTypes: types });
    expect(current.machineType).toBe('a100');
    // The default (cpu) must be defined too.
    expect(
      checkDefinition({ ...input, machineType: undefined }, undefined, { machineTypes: types }).machineType,
    ).toBe('cpu');
    expect(() => checkDefinition({ machineType: 'gpu' }, current, { machineTypes: types })).toThrow(
      expect.objectContaining({ details: { machineType: expect.stringMatching(/a100, cpu/) } }),
    );
    // A change of something else keeps a machine type that was removed since.
    const removed = new Map([['cpu', {}]]);
    expect(checkDefinition({ version: '2' }, current, { machineTypes: removed }).machineType).toBe('a100');
  });

  it('are any name without a file', () => {
    expect(checkDefinition(input).machineType).toBe('h100');
  });
});

describe('visibility, sharing and secrets', () => {
  const team = '6f1c2a9e-8d2b-4f5a-9c3e-1a2b3c4d5e6f';

  it('takes public or private, a list of team ids and a list of secret names', () => {
    const d = checkDefinition({
      ...minimal,
      visibility: 'private',
      sharedWith: [team.toUpperCase(), team],
      secrets: ['HF_TOKEN', 'licence_key'],
    });
    expect(d).toMatchObject({
      visibility: 'private',
      sharedWith: [team],
      secrets: ['HF_TOKEN', 'licence_key'],
    });
    // null resets to the defaults, absent keeps.
    expect(checkDefinition({ visibility: null, secrets: null }, d)).toMatchObject({
      visibility: 'public',
      sharedWith: [team],
      secrets: [],
    });
  });

  it('refuses other visibilities, ids that are not UUIDs and names that are not usable environment variables', () => {
    expect(() =>
      checkDefinition({
        ...minimal,
        visibility: 'secret',
        sharedWith: ['team-a'],
        secrets: ['HF_TOKEN', 'HF_TOKEN', '1ABC', 'PATH', 'KEY_FILE'],
      }),
    ).toThrow(
      expect.objectContaining({
        details: {
          visibility: 'must be one of public, private',
          'sharedWith[0]': 'must be a team id (a UUID)',
          'secrets[1]': 'is named twice',
          'secrets[2]': expect.stringMatching(/environment variable name/),
          'secrets[3]': 'PATH is set by the service for every job',
          'secrets[4]': expect.stringMatching(/_FILE/),
        },
      }),
    );
  });
});

describe('classificationOf', () => {
  it('is fast for every machine type for now', () => {
    expect(classificationOf('cpu')).toBe('fast');
    expect(classificationOf('gpu')).toBe('fast');
  });
});
