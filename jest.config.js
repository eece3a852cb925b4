// Tests are compiled by tsc into dist/ first (npm test builds), so Jest runs plain ES modules.
export default {
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
    },
  ],
};
