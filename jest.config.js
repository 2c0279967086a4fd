/** Jest projects: unit specs beside the code, the contract suite, and end-to-end tests. */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];

const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc },
  moduleFileExtensions: ['ts', 'js', 'json'],
  moduleNameMapper: {
    '^@app/distributed-lock$': '<rootDir>/libs/distributed-lock/src',
    '^@app/distributed-lock/(.*)$': '<rootDir>/libs/distributed-lock/src/$1',
  },
  rootDir: __dirname,
};

module.exports = {
  // Exit once the results are in: a safety net, so that a handle a suite leaves behind cannot hang CI. Look
  // for one with `npx jest --detectOpenHandles --forceExit=false`. The one found (a ZooKeeper connect still
  // pending when its strategy closed, retrying a closed port) is fixed in ZooKeeperSession.close().
  forceExit: true,
  // Servers for the contract and e2e projects: started once per run, stopped at the end (see scripts/services).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  transform: common.transform,
  rootDir: __dirname,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/apps/**/*.spec.ts', '<rootDir>/scripts/**/*.spec.ts', '<rootDir>/bench/**/*.spec.ts', '<rootDir>/test/support/**/*.spec.ts'] },
    { ...common, displayName: 'contract', testMatch: ['<rootDir>/test/contract/**/*.spec.ts', '<rootDir>/test/integration/**/*.spec.ts'] },
    { ...common, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.spec.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.spec.ts'] },
  ],
};
