/** A secret as a job holds it: its name and its value in clear. */
export interface SecretValue {
  name: string;
  value: string;
}

/**
 * Replaces every occurrence of every secret value in `text` by `[secret NAME]`, so logs, log
 * tails, webhooks and events never carry a value. Longer values go first, so a value that contains
 * another is replaced whole rather than leaving its remainder; empty values are never matched.
 * A value is matched as it is written (UTF-8 text), not in encoded forms (base64, URL escapes).
 */
export function redactSecrets(text: string, secrets: readonly SecretValue[]): string {
  return secretRedactor(secrets)(text);
}

/** `redactSecrets` with its pattern built once, for the many lines of one job's output. */
export function secretRedactor(secrets: readonly SecretValue[]): (text: string) => string {
  const ordered = secrets.filter((s) => s.value.length > 0).sort((a, b) => b.value.length - a.value.length);
  if (!ordered.length) return (text) => text;
  // One pass with an alternation, so a replacement's own text is never searched again.
  const names = new Map(ordered.map((s) => [s.value, s.name]));
  const pattern = new RegExp([...names.keys()].map(escapeRegExp).join('|'), 'g');
  return (text) => (text ? text.replace(pattern, (value) => `[secret ${names.get(value)}]`) : text);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Lines of a multi-line value shorter than this are not redacted alone (they would match too much). */
const MIN_LINE_FRAGMENT = 4;

/**
 * What a job's output, read line by line, is redacted with: every value, and each line of a
 * multi-line value (a PEM key printed whole reaches the log as several lines, none of which
 * holds the whole value), under the value's name.
 */
export function lineRedactions(secrets: readonly SecretValue[]): SecretValue[] {
  const fragments = secrets.flatMap((s) =>
    s.value.includes('\n')
      ? s.value
          .split(/\r?\n/)
          .filter((line) => line.length >= MIN_LINE_FRAGMENT)
          .map((line) => ({ name: s.name, value: line }))
      : [],
  );
  return [...secrets, ...fragments];
}
