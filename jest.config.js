// Tests are compiled by tsc into dist/ first (npm test builds), so Jest runs plain ES modules.
export default {
  // Integration tests drive real containerd, runc and CNI: pods take seconds, back-offs tens of seconds.
  testTimeout: 180_000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform: {},
      roots: ['<rootDir>/dist/test/unit'],
      testMatch: ['**/*.test.js'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform: {},
      roots: ['<rootDir>/dist/test/integration'],
      testMatch: ['**/*.test.js'],
      globalSetup: '<rootDir>/dist/test/integration/global-setup.js',
    },
  ],
};
