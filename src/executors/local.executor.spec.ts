import { LineSplitter, MAX_LINE } from './local.executor';

function linesOf(chunks: string[]): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((l) => lines.push(l));
  for (const c of chunks) splitter.push(c);
  splitter.end();
  return lines;
}

describe('LineSplitter', () => {
  it('joins lines split across chunks and drops CR before LF', () => {
    expect(linesOf(['one\r\ntw', 'o\nthr', 'ee'])).toEqual(['one', 'two', 'three']);
  });

  it('cuts a line longer than MAX_LINE without holding the excess', () => {
    const long = 'x'.repeat(MAX_LINE * 3);
    const lines = linesOf([long.slice(0, MAX_LINE * 2), long.slice(MAX_LINE * 2), '\nnext\n']);
    expect(lines).toEqual(['x'.repeat(MAX_LINE), 'next']);
  });

  it('keeps empty lines', () => {
    expect(linesOf(['a\n\nb\n'])).toEqual(['a', '', 'b']);
  });
});
