#!/usr/bin/env node
// `npm test`: every Vitest project (unit, contract against the real servers, faults, end-to-end) in one
// run, then a plain summary line "N passed, N failed" and the wall time. Extra arguments go to Vitest; with
// a `--project` among them, only the projects named run (`npm run test:long` runs the long one, which a
// plain `npm test` leaves out).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What `npm test` runs when no project is named: everything but the long runs. */
const DEFAULT_PROJECTS = ['unit', 'contract', 'secure', 'faults', 'soak', 'e2e'];

/** Where the JSON report of the last run is kept (inside node_modules: never committed). */
const LAST_RUN_DIR = join(import.meta.dirname, '..', 'node_modules', '.cache', 'lock-tests');

const started = Date.now();
const args = process.argv.slice(2);
const projects = args.some((arg) => arg === '--project' || arg.startsWith('--project=')) ? [] : DEFAULT_PROJECTS.flatMap((name) => ['--project', name]);
const dir = mkdtempSync(join(tmpdir(), 'lock-tests-'));
const resultFile = join(dir, 'results.json');
const vitest = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${resultFile}`, ...projects, ...args],
  { stdio: 'inherit', env: process.env },
);

let summary = { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, testResults: [] };
try {
  summary = JSON.parse(readFileSync(resultFile, 'utf8'));
} catch {
  summary.numFailedTests = 1; // Vitest died before writing results: count it as a failure.
  // Say how, so that a rare death can be told apart from a failure the next time it happens.
  console.error(`\nVitest ended without writing its results: exit status ${vitest.status}, signal ${vitest.signal ?? 'none'}${vitest.error ? `, ${vitest.error.message}` : ''}`);
}
// The report of the last run stays, for scripts/test-order/record-durations.mjs and for a look at which
// files took the time (each file's start and end are in it).
try {
  mkdirSync(LAST_RUN_DIR, { recursive: true });
  copyFileSync(resultFile, join(LAST_RUN_DIR, 'last-run.json'));
} catch {
  // No report (Vitest died): nothing to keep.
}
rmSync(dir, { recursive: true, force: true });

// A file that failed to load has no tests to count: count it as one failure.
const brokenFiles = summary.testResults.filter((file) => file.status === 'failed' && file.assertionResults.length === 0).length;
const failed = summary.numFailedTests + brokenFiles;
const skipped = summary.numPendingTests + summary.numTodoTests;
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(`\nwall time: ${seconds} s`);
console.log(`${summary.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(vitest.status === 0 && failed === 0 ? 0 : 1);
