import type { ModelArgument } from './model.entity';

/** A value given to a model argument: a file argument's value is a media id. */
export type ArgValue = string | number | (string | number)[];

export const ARGS_PLACEHOLDER = '{args}';
export const VALUE_PLACEHOLDER = ':value';

/**
 * Splits a command or format template into words, as a shell would split a line but without
 * any expansion: whitespace separates words, '...' is literal, "..." is literal except for \" and
 * \\, and a backslash outside quotes keeps the next character. Only templates written by model
 * owners go through here; argument values never do.
 */
export function splitWords(template: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c === "'") {
      const end = template.indexOf("'", i + 1);
      if (end === -1) throw new Error('unclosed single quote');
      word += template.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < template.length && template[j] !== '"'; j++) {
        if (template[j] === '\\' && (template[j + 1] === '"' || template[j + 1] === '\\')) j++;
        word += template[j];
      }
      if (j >= template.length) throw new Error('unclosed double quote');
      inWord = true;
      i = j;
    } else if (c === '\\' && i + 1 < template.length) {
      word += template[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * The argv of a job: the model's command split into words, with the formatted arguments in
 * place of the `{args}` word. Each argument's format is split into words too and `:value` is
 * replaced by the value inside its word, so a value always stays within one argv element,
 * whatever characters it holds. Arguments come in the model's order; absent optional ones are
 * left out; a list repeats the format for each item. `route` turns a file's media id into the
 * path or URL the executor gives the program.
 */
export function buildArgv(
  command: string,
  defs: readonly ModelArgument[],
  values: Record<string, ArgValue>,
  route: (mediaId: string) => string,
): string[] {
  const words = splitWords(command);
  const at = words.indexOf(ARGS_PLACEHOLDER);
  if (at === -1 || words.lastIndexOf(ARGS_PLACEHOLDER) !== at)
    throw new Error(`the command must have ${ARGS_PLACEHOLDER} once, as a word of its own`);
  // The program must come from the template: an argument value must never choose what runs.
  if (at === 0) throw new Error(`the command names no program before ${ARGS_PLACEHOLDER}`);
  const formatted: string[] = [];
  for (const def of defs) {
    const value = values[def.name];
    if (value === undefined) continue;
    const items = Array.isArray(value) ? value : [value];
    for (const item of items) {
      const text = def.type === 'file' ? route(String(item)) : String(item);
      for (const word of splitWords(def.format)) formatted.push(word.split(VALUE_PLACEHOLDER).join(text));
    }
  }
  return [...words.slice(0, at), ...formatted, ...words.slice(at + 1)];
}
