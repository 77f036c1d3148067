/** The browser suite (`npm run test:browser`): the service with its web app, driven by Chromium. */
const base = require('../jest.config.js');

module.exports = {
  ...base,
  rootDir: '..',
  roots: ['<rootDir>/test-browser'],
  testMatch: ['**/*.test.ts'],
  // One service and one browser; the tests of a file run in order.
  maxWorkers: 1,
  testTimeout: 120000,
};
