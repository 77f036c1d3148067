/**
 * `media-demo`: the program behind the built-in demo models. It runs as a job's process (never
 * inside the service), needs no GPU and no network, writes its files to $OUTPUT_DIR and prints
 * its result as one JSON line last.
 *
 *   media-demo thumbnail <image> [--width=N] [--format=png|jpeg|webp]
 *   media-demo ocr <image> [--lang=eng]
 *   media-demo wordcount <text-file>
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

class UsageError extends Error {}

function parse(argv: string[]): { positional: string[]; options: Record<string, string> } {
  const positional: string[] = [];
  const options: Record<string, string> = {};
  for (const a of argv) {
    const m = /^--([a-z]+)=(.*)$/s.exec(a);
    if (m) options[m[1]] = m[2];
    else positional.push(a);
  }
  return { positional, options };
}

function outputDir(): string {
  const dir = process.env.OUTPUT_DIR;
  if (!dir) throw new UsageError('OUTPUT_DIR is not set');
  return dir;
}

async function thumbnail(image: string, options: Record<string, string>) {
  const { default: sharp } = await import('sharp');
  const width = options.width === undefined ? 256 : Number(options.width);
  if (!Number.isInteger(width) || width < 16 || width > 4096)
    throw new UsageError('--width must be 16..4096');
  const format = (options.format ?? 'png').toLowerCase();
  if (!['png', 'jpeg', 'webp'].includes(format)) throw new UsageError('--format must be png, jpeg or webp');
  const out = path.join(outputDir(), `thumbnail.${format === 'jpeg' ? 'jpg' : format}`);
  // Bounded decoding: an image claiming billions of pixels is refused, not decoded.
  const info = await sharp(image, { limitInputPixels: 100_000_000 })
    .rotate() // honour EXIF orientation
    .resize({ width, withoutEnlargement: true })
    .toFormat(format as 'png' | 'jpeg' | 'webp')
    .toFile(out);
  return { width: info.width, height: info.height, format: info.format, size: info.size };
}

async function ocr(image: string, options: Record<string, string>) {
  const lang = options.lang ?? 'eng';
  if (lang !== 'eng') throw new UsageError('only --lang=eng is installed');
  const { createWorker } = await import('tesseract.js');
  // The English data ships as an npm package: no download, no network. It is CommonJS whose
  // exports Node cannot name statically, so the compiled `import()` has them on `default` only
  // (without it tesseract.js took langPath undefined and fetched the data from its CDN).
  const { default: eng } = (await import('@tesseract.js-data/eng')) as unknown as {
    default: { langPath: string };
  };
  const worker = await createWorker(lang, 1, {
    langPath: eng.langPath,
    gzip: true,
    cacheMethod: 'none',
    logger: () => undefined,
  });
  try {
    const { data } = await worker.recognize(image);
    const text = data.text.trim();
    await writeFile(path.join(outputDir(), 'text.txt'), `${text}\n`);
    return { text, confidence: data.confidence };
  } finally {
    await worker.terminate();
  }
}

async function wordcount(file: string) {
  const text = await readFile(file, 'utf8');
  const result = {
    lines: text ? text.split('\n').length - (text.endsWith('\n') ? 1 : 0) : 0,
    words: (text.match(/\S+/g) ?? []).length,
    characters: [...text].length,
  };
  await writeFile(path.join(outputDir(), 'wordcount.json'), `${JSON.stringify(result)}\n`);
  return result;
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  const { positional, options } = parse(rest);
  if (positional.length !== 1) throw new UsageError(`${command ?? 'media-demo'} takes one input file`);
  const [input] = positional;
  console.error(`media-demo ${command}: ${path.basename(input)}`);
  const result =
    command === 'thumbnail'
      ? await thumbnail(input, options)
      : command === 'ocr'
        ? await ocr(input, options)
        : command === 'wordcount'
          ? await wordcount(input)
          : (() => {
              throw new UsageError(
                `unknown command ${JSON.stringify(command)}; use thumbnail, ocr or wordcount`,
              );
            })();
  console.log(JSON.stringify(result));
}

main().catch((err: unknown) => {
  console.error(err instanceof UsageError ? `usage: ${err.message}` : err);
  process.exit(err instanceof UsageError ? 2 : 1);
});
