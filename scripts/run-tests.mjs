#!/usr/bin/env node
// `npm test`: every Jest project (unit, contract against the real servers, end-to-end) in one run, then a
// plain summary line "N passed, N failed" and the wall time. Extra arguments go to Jest.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const started = Date.now();
const dir = mkdtempSync(join(tmpdir(), 'lock-tests-'));
const resultFile = join(dir, 'results.json');
const jest = spawnSync(
  process.execPath,
  ['node_modules/jest/bin/jest.js', '--json', `--outputFile=${resultFile}`, ...process.argv.slice(2)],
  { stdio: 'inherit', env: process.env },
);

let summary = { numPassedTests: 0, numFailedTests: 0, numPendingTests: 0, numRuntimeErrorTestSuites: 0 };
try {
  summary = JSON.parse(readFileSync(resultFile, 'utf8'));
} catch {
  summary.numFailedTests = 1; // Jest died before writing results: count it as a failure.
  // Say how, so that a rare death can be told apart from a failure the next time it happens.
  console.error(`\nJest ended without writing its results: exit status ${jest.status}, signal ${jest.signal ?? 'none'}${jest.error ? `, ${jest.error.message}` : ''}`);
}
rmSync(dir, { recursive: true, force: true });

const seconds = ((Date.now() - started) / 1000).toFixed(1);
const failed = summary.numFailedTests + summary.numRuntimeErrorTestSuites;
console.log(`\nwall time: ${seconds} s`);
console.log(`${summary.numPassedTests} passed, ${failed} failed${summary.numPendingTests ? `, ${summary.numPendingTests} skipped` : ''}`);
process.exit(jest.status === 0 && failed === 0 ? 0 : 1);
