import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** The web app's build: `npm run build:web` (scripts/build-web.ts) runs it and compresses the output. */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  // No React plugin: Vite's own transform handles JSX; fast refresh is not needed for a build.
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    assetsDir: 'assets',
    sourcemap: false,
    reportCompressedSize: false,
  },
  logLevel: 'warn',
});
