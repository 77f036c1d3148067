/**
 * Builds dist/ only when a source changed since the last build, so `npm start` (and the scripts
 * that run from dist/) start at once when nothing did. Plain JavaScript: it runs before any build.
 * A checkout or an edit makes files newer than the build stamp; a deleted file changes its
 * folder's time. `npm run build` always builds.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const stamp = path.join(root, 'dist', '.tsbuildinfo.build');
const inputs = [
  'src',
  'rest-compat',
  'migrations',
  'scripts',
  'bench',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];

/** The latest modification time below `file` (itself included). */
function newest(file) {
  const stat = statSync(file, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const name of readdirSync(file)) latest = Math.max(latest, newest(path.join(file, name)));
  return latest;
}

const built = statSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const changed = Math.max(...inputs.map((i) => newest(path.join(root, i))));
if (changed > built) {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  } catch {
    process.exit(1);
  }
  // tsc leaves its build info alone when no output changed: mark this build as the latest.
  const now = new Date();
  utimesSync(stamp, now, now);
}
