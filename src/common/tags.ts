import { AppError } from './errors';

export const MAX_TAGS = 32;
export const MAX_TAG_LENGTH = 64;

/**
 * Tags as stored: trimmed, no empties, no duplicates (first spelling wins), in the given order.
 * Accepts an array of strings or one comma-separated string (multipart and query forms).
 */
export function normaliseTags(input: unknown, field = 'tags'): string[] {
  if (input === undefined || input === null) return [];
  const raw = typeof input === 'string' ? input.split(',') : input;
  if (!Array.isArray(raw) || raw.some((t) => typeof t !== 'string'))
    throw AppError.validation({ [field]: 'must be a list of strings' });
  // Refused before any work: a huge list must not cost more than reading it.
  if (raw.length > MAX_TAGS * 4) throw AppError.validation({ [field]: `at most ${MAX_TAGS} tags` });
  const tags: string[] = [];
  const seen = new Set<string>();
  for (const t of raw as string[]) {
    const tag = t.trim();
    if (!tag || seen.has(tag)) continue;
    seen.add(tag);
    if (tag.length > MAX_TAG_LENGTH)
      throw AppError.validation({ [field]: `a tag may have at most ${MAX_TAG_LENGTH} characters` });
    // eslint-disable-next-line no-control-regex -- control characters are what we refuse
    if (/[\u0000-\u001f\u007f]/.test(tag))
      throw AppError.validation({ [field]: 'tags may not contain control characters' });
    tags.push(tag);
  }
  if (tags.length > MAX_TAGS) throw AppError.validation({ [field]: `at most ${MAX_TAGS} tags` });
  return tags;
}
