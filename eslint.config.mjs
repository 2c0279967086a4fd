// Lint: typescript-eslint's recommended rules, plus the type-aware rules that catch what matters most in
// lock code: promises that nobody awaits, and `any` leaking into the public API.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Import paths of the library's upper layers, relative or through the workspace alias. */
const LAYERS = {
  strategies: ['**/strategies', '**/strategies/**'],
  nest: ['**/nest', '**/nest/**', '@nestjs/*'],
};

export default tseslint.config(
  { ignores: ['**/dist/**', 'node_modules/**', 'coverage/**', 'demo-report/**', 'bench/results/**', 'test/consumers/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-control-regex': 'off',
    },
  },
  {
    files: ['**/*.spec.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': 'off' },
  },
  // The library's layers point one way: nest/ → strategies/ → locking/, versioning/ (and errors/). The
  // engine knows no backend and no Nest; a strategy can be used and tested without a Nest container. Specs
  // may compose layers (the lock service's property test runs on the in-memory strategy).
  {
    files: ['libs/distributed-lock/src/locking/**/*.ts', 'libs/distributed-lock/src/versioning/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: [...LAYERS.strategies, ...LAYERS.nest], message: 'locking/ and versioning/ import no strategy and nothing of Nest: the layers point one way.' }] }],
    },
  },
  // The OpenTelemetry instrumentation sits beside the engine: it works without a Nest container (NestJS
  // Observe's adapter, which is Nest, lives in nest/telemetry/).
  {
    files: ['libs/distributed-lock/src/telemetry/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: LAYERS.nest, message: 'telemetry/ imports nothing of Nest: it works without a Nest container.' }] }],
    },
  },
  {
    files: ['libs/distributed-lock/src/strategies/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: LAYERS.nest, message: 'strategies/ import nothing of Nest: a strategy works without a Nest container.' }] }],
    },
  },
  // The demo app is an application like a user's: the tooling that runs it (scripts/demo, the test servers)
  // imports the app, never the other way round.
  {
    files: ['apps/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/scripts', '**/scripts/**', '**/test/**', '**/bench/**'], message: 'the demo app imports no test or demo tooling.' }] }],
    },
  },
);
