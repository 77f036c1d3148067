import { PassThrough } from 'node:stream';
import { MAX_LINE, splitLines } from './local.executor';

async function linesOf(chunks: string[]): Promise<string[]> {
  const stream = new PassThrough();
  const lines: string[] = [];
  const done = splitLines(stream, (l) => lines.push(l));
  for (const c of chunks) stream.write(c);
  stream.end();
  await done;
  return lines;
}

describe('splitLines', () => {
  it('joins lines split across chunks and drops CR before LF', async () => {
    expect(await linesOf(['one\r\ntw', 'o\nthr', 'ee'])).toEqual(['one', 'two', 'three']);
  });

  it('cuts a line longer than MAX_LINE without holding the excess', async () => {
    const long = 'x'.repeat(MAX_LINE * 3);
    const lines = await linesOf([long.slice(0, MAX_LINE * 2), long.slice(MAX_LINE * 2), '\nnext\n']);
    expect(lines).toEqual(['x'.repeat(MAX_LINE), 'next']);
  });

  it('keeps empty lines', async () => {
    expect(await linesOf(['a\n\nb\n'])).toEqual(['a', '', 'b']);
  });
});
