// Preloaded into the image build's `npm ci` (Containerfile: NODE_OPTIONS=--require): file opens that
// fail with EMFILE wait and are tried again. npm extracts every package at once, and a build step
// that cannot raise its open-files limit (buildah in a sandbox that holds it at 20,000; engines
// give 1,048,576) runs out of them when the machine is fast. npm's own graceful-fs queues the
// callback API (tar's writes); the promise API (cacache's index and content) is wrapped here.
/* global require, process, setTimeout */
/* eslint-disable @typescript-eslint/no-require-imports */
const fs = require('node:fs');
const path = require('node:path');

try {
  const npm = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm');
  require(path.join(npm, 'node_modules', 'graceful-fs')).gracefulify(fs);
} catch {
  // npm without graceful-fs: the promise API below still waits.
}

const busy = (err) => err && (err.code === 'EMFILE' || err.code === 'ENFILE');
for (const name of ['open', 'readFile', 'writeFile', 'appendFile', 'readdir', 'opendir', 'copyFile']) {
  const original = fs.promises[name];
  fs.promises[name] = async function (...args) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await original.apply(this, args);
      } catch (err) {
        if (!busy(err) || attempt >= 2000) throw err;
        await new Promise((resolve) => setTimeout(resolve, Math.min(2 ** attempt, 100)));
      }
    }
  };
}
