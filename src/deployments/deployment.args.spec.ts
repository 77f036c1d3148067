import { AppError } from '../common/errors';
import type { ModelArgument } from '../models/model.entity';
import { checkArgs, MAX_STRING } from './deployment.args';

const def = (
  name: string,
  type: ModelArgument['type'],
  more: Partial<ModelArgument> = {},
): ModelArgument => ({
  name,
  type,
  format: ':value',
  description: null,
  example: null,
  optional: false,
  tags: null,
  min: null,
  max: null,
  ...more,
});

const defs = [
  def('image', 'file'),
  def('width', 'int', { optional: true, min: 16, max: 4096 }),
  def('ratio', 'float', { optional: true, min: 0, max: 1 }),
  def('label', 'string', { optional: true }),
  def('tags', 'array', { optional: true }),
  def('format', 'string', { optional: true, choices: ['png', 'webp'] }),
];
const ID = '3f2a7c1e-0b6d-4c8e-9a51-7d2f4e6b8c90';

function problems(input: unknown): Record<string, string> {
  try {
    checkArgs(defs, input);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('VALIDATION_FAILED');
    return (err as AppError).details!;
  }
  throw new Error('expected a validation failure');
}

describe('checkArgs', () => {
  it('accepts valid values, coercing numeric strings, and lists file arguments', () => {
    const { values, files } = checkArgs(defs, {
      image: ID.toUpperCase(),
      width: '256',
      ratio: 0.5,
      label: 'x',
      tags: ['a', 2],
    });
    expect(values).toEqual({ image: ID, width: 256, ratio: 0.5, label: 'x', tags: ['a', 2] });
    expect(files).toEqual([{ name: 'image', mediaId: ID }]);
  });

  it('accepts one of the choices', () => {
    expect(checkArgs(defs, { image: ID, format: 'webp' }).values).toEqual({ image: ID, format: 'webp' });
  });

  it('treats null as absent', () => {
    expect(checkArgs(defs, { image: ID, width: null }).values).toEqual({ image: ID });
  });

  it.each([
    ['a missing required argument', {}, 'args.image', /required/],
    ['an unknown argument', { image: ID, colour: 'red' }, 'args.colour', /not an argument/],
    ['a non-integer int', { image: ID, width: 12.5 }, 'args.width', /integer/],
    ['a word for an int', { image: ID, width: 'wide' }, 'args.width', /integer/],
    ['an int below min', { image: ID, width: 8 }, 'args.width', /at least 16/],
    ['an int above max', { image: ID, width: 5000 }, 'args.width', /at most 4096/],
    ['a float above max', { image: ID, ratio: '1.5' }, 'args.ratio', /at most 1/],
    ['a non-number float', { image: ID, ratio: true }, 'args.ratio', /number/],
    ['an infinite float', { image: ID, ratio: '1e999' }, 'args.ratio', /finite/],
    ['a number for a string', { image: ID, label: 5 }, 'args.label', /string/],
    ['a too long string', { image: ID, label: 'x'.repeat(MAX_STRING + 1) }, 'args.label', /at most/],
    ['a NUL in a string', { image: ID, label: 'a\0b' }, 'args.label', /NUL/],
    ['a file that is no id', { image: '../etc/passwd' }, 'args.image', /media/],
    ['a list that is not', { image: ID, tags: 'a' }, 'args.tags', /list/],
    ['a list of objects', { image: ID, tags: [{}] }, 'args.tags', /string/],
    [
      'a value outside the choices',
      { image: ID, format: 'gif' },
      'args.format',
      /^must be one of png, webp$/,
    ],
  ])('names the argument for %s', (_what, input, field, message) => {
    expect(problems(input)[field]).toMatch(message);
  });

  it('reports every problem at once', () => {
    expect(Object.keys(problems({ width: 1, colour: 'x' })).sort()).toEqual([
      'args.colour',
      'args.image',
      'args.width',
    ]);
  });

  it('refuses args that are not an object', () => {
    expect(problems([1, 2])).toHaveProperty('args');
    expect(problems('x')).toHaveProperty('args');
  });
});
