/** Longer output lines are cut here: a program without newlines must not grow memory. */
export const MAX_LINE = 8192;
/** Splits text chunks into lines (without the newline); a line is cut at MAX_LINE. */
export class LineSplitter {
  private partial = '';

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: string): void {
    let text = this.partial + chunk;
    let nl: number;
    while ((nl = text.indexOf('\n')) !== -1) {
      this.onLine(text.slice(0, Math.min(nl, MAX_LINE)).replace(/\r$/, ''));
      text = text.slice(nl + 1);
    }
    // A line longer than MAX_LINE keeps only its start; the rest is dropped up to the newline.
    this.partial = text.length > MAX_LINE ? text.slice(0, MAX_LINE) : text;
  }

  end(): void {
    if (this.partial) this.onLine(this.partial);
    this.partial = '';
  }
}
