import path from 'node:path';
import { fileTypeFromBuffer } from 'file-type';

/** Bytes file-type needs to recognise every format it knows. */
export const SNIFF_BYTES = 4100;

/**
 * Formats file-type cannot recognise (no magic number), accepted on the client's word when
 * the content looks like text. Everything else unrecognised is stored as `bin`.
 */
const TEXT_FORMATS: Record<string, string> = {
  txt: 'text/plain; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  log: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  tsv: 'text/tab-separated-values; charset=utf-8',
  json: 'application/json',
  jsonl: 'application/jsonl',
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
  yaml: 'application/yaml',
  yml: 'application/yaml',
};

export interface Sniffed {
  extension: string;
  contentType: string;
}

function looksLikeUtf8Text(head: Buffer): boolean {
  if (head.includes(0)) return false;
  try {
    // `stream: true` tolerates a multi-byte character cut off at the end of the sample.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/** Extension and content type from the content itself; the client's name only for text. */
export async function sniff(head: Buffer, clientName: string): Promise<Sniffed> {
  const detected = head.length ? await fileTypeFromBuffer(head) : undefined;
  if (detected) return { extension: detected.ext, contentType: detected.mime };
  const ext = path.extname(clientName).slice(1).toLowerCase();
  if (ext in TEXT_FORMATS && looksLikeUtf8Text(head))
    return { extension: ext, contentType: TEXT_FORMATS[ext] };
  return { extension: 'bin', contentType: 'application/octet-stream' };
}

const MAX_NAME = 255;

/**
 * The client's file name as we keep it for display: the last path segment, without control or
 * bidi-override characters, at most 255 characters (keeping the extension), never empty.
 */
export function sanitiseFileName(name: string | undefined | null): string {
  const base = (name ?? '').split(/[/\\]/).pop() ?? '';
  const cleaned = base
    .normalize('NFC')
    // eslint-disable-next-line no-control-regex -- control characters are what we strip
    .replace(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/g, '')
    .trim()
    .replace(/^\.+$/, '');
  if (!cleaned) return 'upload';
  if (cleaned.length <= MAX_NAME) return cleaned;
  const ext = path.extname(cleaned).slice(0, 16);
  return cleaned.slice(0, MAX_NAME - ext.length) + ext;
}

/** A relative path a job wrote (`sub/out.png`), each segment sanitised; `.` and `..` dropped. */
export function sanitiseRelativePath(name: string): string {
  const segments = name
    .split(/[/\\]/)
    .filter((s) => s && s !== '.' && s !== '..')
    .map((s) => sanitiseFileName(s));
  return segments.join('/').slice(-1024) || 'output';
}
