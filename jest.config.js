/** Jest runs TypeScript through swc. ESM-only packages (jose, openid-client, oidc-provider and
 * their ESM dependencies) are transformed to CommonJS too, since jest's module system cannot
 * require() ES modules the way Node 20.19+ does. */
const esmOnly = [
  'jose',
  'openid-client',
  'oauth4webapi',
  'oidc-provider',
  'file-type',
  'strtok3',
  'token-types',
  'peek-readable',
  'uint8array-extras',
  '@tokenizer',
  '@borewit',
  'nanoid',
  'quick-lru',
  // oidc-provider 8's HTTP client (got) and its ESM dependencies
  'got',
  '@sindresorhus/is',
  '@szmarczak/http-timer',
  'cacheable-lookup',
  'cacheable-request',
  'form-data-encoder',
  'lowercase-keys',
  'mimic-response',
  'normalize-url',
  'p-cancelable',
  'responselike',
  // @kubernetes/client-node 1.x ships ES modules only (its own dependencies have CommonJS builds)
  '@kubernetes/client-node',
];
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test', '<rootDir>/rest-compat'],
  testMatch: ['**/*.spec.ts', '**/*.test.ts'],
  transform: { '^.+\\.(t|m?j)s$': ['@swc/jest'] },
  transformIgnorePatterns: [`node_modules/(?!(${esmOnly.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  // file-type exports only `import`/`module-sync` conditions, which jest's resolver does not know.
  moduleNameMapper: { '^file-type$': '<rootDir>/node_modules/file-type/index.js' },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  setupFiles: ['reflect-metadata'],
  maxWorkers: 2,
  testTimeout: 30000,
};
