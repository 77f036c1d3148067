/**
 * Builds the web app (`web/`) into `WEB_DIR`'s default, `dist/web`, with Vite, and writes a
 * brotli and a gzip copy of every text file beside it, which the service sends as they are.
 * `npm start` runs it each time: when nothing the build reads has changed since the last build
 * (a hash of web/, the lockfile and this script), it stops at once.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

const root = path.resolve(__dirname, '..', '..');
const outDir = path.join(root, 'dist', 'web');
const stampFile = path.join(outDir, '.build-stamp');
const COMPRESSIBLE = /\.(js|css|html|svg|json|txt)$/;

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/** A hash of everything the build reads. */
async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const inputs = [...(await files(path.join(root, 'web'))), path.join(root, 'package-lock.json'), __filename];
  for (const file of inputs) {
    hash.update(path.relative(root, file)).update('\0');
    hash.update(await readFile(file)).update('\0');
  }
  return hash.digest('hex');
}

async function compress(): Promise<void> {
  const br = promisify(brotliCompress);
  const gz = promisify(gzip);
  for (const file of await files(outDir)) {
    if (!COMPRESSIBLE.test(file)) continue;
    const content = await readFile(file);
    await writeFile(
      `${file}.br`,
      await br(content, {
        params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: content.length },
      }),
    );
    await writeFile(`${file}.gz`, await gz(content, { level: 9 }));
  }
}

async function main() {
  const hash = await sourceHash();
  if (existsSync(path.join(outDir, 'index.html')) && existsSync(stampFile)) {
    if ((await readFile(stampFile, 'utf8')).trim() === hash) return;
  }
  const started = Date.now();
  // Vite is an ES module: loaded with import(), which Node keeps in this CommonJS build.
  const { build } = await import('vite');
  await build({ configFile: path.join(root, 'web', 'vite.config.mts') });
  await compress();
  await writeFile(stampFile, `${hash}\n`);
  console.log(`web app built into ${path.relative(root, outDir)} in ${Date.now() - started} ms`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
