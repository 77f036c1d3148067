const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
const PART = /(\d+(?:\.\d+)?)(ms|h|m|s)/y;

/**
 * A duration written as Go writes them and as Replicate's `Cancel-After` takes them: `30s`, `5m`,
 * `1h30m`, `1.5h`, `500ms`, units in decreasing order, each at most once. Answers milliseconds,
 * or null when the text is not such a duration.
 */
export function parseDuration(text: string): number | null {
  if (text.length > 64) return null;
  let ms = 0;
  let at = 0;
  let lastUnit = Infinity;
  while (at < text.length) {
    PART.lastIndex = at;
    const m = PART.exec(text);
    if (!m) return null;
    const unit = UNIT_MS[m[2]];
    if (unit >= lastUnit) return null; // repeated or out of order: `5s1m`, `1m1m`
    lastUnit = unit;
    ms += Number(m[1]) * unit;
    at = PART.lastIndex;
  }
  return at === 0 ? null : Math.round(ms);
}
