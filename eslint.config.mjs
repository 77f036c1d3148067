import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

export default tseslint.config(
  {
    // Fixtures are plain CommonJS programs the tests run as jobs, outside TypeScript.
    ignores: [
      'dist/**',
      'node_modules/**',
      '.data/**',
      'rest-compat/generated/**',
      'web/src/generated/**',
      'test-browser/artifacts/**',
      'jest.config.js',
      'test-browser/jest.config.js',
      'test/fixtures/**',
    ],
  },
  {
    // CommonJS configuration files of tools (dependency-cruiser's).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable' } },
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration through src/config.ts.' },
      ],
    },
  },
  {
    // The demo program runs as a job: its environment (OUTPUT_DIR) is its input, not our config.
    files: [
      'src/config.ts',
      'src/demo-models/**',
      'test/**',
      'test-slurm/**',
      'test-browser/**',
      'bench/**',
      'scripts/**',
    ],
    rules: { 'no-restricted-properties': 'off' },
  },
);
