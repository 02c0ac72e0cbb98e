/** Jest runs the pure modules of the labextension (model, series, format, protocol) under ts-jest. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests/js'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: '<rootDir>/tests/js/tsconfig.json' }]
  },
  moduleFileExtensions: ['ts', 'tsx', 'js', 'json'],
  testPathIgnorePatterns: ['/node_modules/', '/lib/']
};
