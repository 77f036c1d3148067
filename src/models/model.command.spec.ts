import type { ModelArgument } from '../models/model.entity';
import { buildArgv, splitWords } from './model.command';

const arg = (
  name: string,
  type: ModelArgument['type'],
  format: string,
  more: Partial<ModelArgument> = {},
): ModelArgument => ({
  name,
  type,
  format,
  description: null,
  example: null,
  optional: false,
  tags: null,
  min: null,
  max: null,
  ...more,
});

describe('splitWords', () => {
  it.each([
    ['prog --a  b', ['prog', '--a', 'b']],
    [`python -c 'print("x y")' {args}`, ['python', '-c', 'print("x y")', '{args}']],
    ['echo "a \\"b\\" c" d\\ e', ['echo', 'a "b" c', 'd e']],
    ["x '' y", ['x', '', 'y']],
    ['  ', []],
  ])('splits %j', (template, words) => {
    expect(splitWords(template)).toEqual(words);
  });

  it('refuses unclosed quotes', () => {
    expect(() => splitWords("a 'b")).toThrow(/quote/);
    expect(() => splitWords('a "b')).toThrow(/quote/);
  });
});

describe('buildArgv', () => {
  const defs = [
    arg('input', 'file', ':value'),
    arg('text', 'string', '--text=:value'),
    arg('count', 'int', '-n :value', { optional: true }),
    arg('tags', 'array', '--tag :value', { optional: true }),
  ];
  const route = (id: string) => `/data/media/${id}.png`;

  it('places formatted arguments at {args}, in the model order', () => {
    const argv = buildArgv('tool run {args} --verbose', defs, { count: 3, text: 'hi', input: 'abc' }, route);
    expect(argv).toEqual(['tool', 'run', '/data/media/abc.png', '--text=hi', '-n', '3', '--verbose']);
  });

  it('leaves out absent optional arguments and repeats the format for lists', () => {
    expect(buildArgv('t {args}', defs, { input: 'f', text: 'x', tags: ['a', 'b c'] }, route)).toEqual([
      't',
      '/data/media/f.png',
      '--text=x',
      '--tag',
      'a',
      '--tag',
      'b c',
    ]);
  });

  it.each([
    ['; rm -rf /'],
    ['$(id)'],
    ['`id`'],
    ['a\nb\r\nc'],
    ['-rf'],
    ['--help'],
    ['|| true &'],
    ['\' " \\'],
    ['{args}'],
    [':value'],
    ['   '],
    [''],
  ])('keeps the hostile value %j as one literal argument', (value) => {
    const argv = buildArgv('prog {args}', [arg('v', 'string', ':value')], { v: value }, route);
    expect(argv).toEqual(['prog', value]);
    const prefixed = buildArgv('prog {args}', [arg('v', 'string', '--v=:value')], { v: value }, route);
    expect(prefixed).toEqual(['prog', `--v=${value}`]);
  });

  it('refuses a command without a standalone {args}', () => {
    expect(() => buildArgv('prog --x={args}', [], {}, route)).toThrow(/\{args\}/);
    // An argument value must never become the program.
    expect(() => buildArgv('{args} --x', [arg('v', 'string', ':value')], { v: 'rm' }, route)).toThrow(
      /no program/,
    );
  });
});
