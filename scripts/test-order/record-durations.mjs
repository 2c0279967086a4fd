#!/usr/bin/env node
// Writes test-durations.json from a Vitest JSON report: the seconds each test file took. The test sequencer
// (longest-first.mts) starts the longest files first from it when Vitest has no timings of its own (a fresh
// clone), so that no long file starts last and holds the run up alone.
// Usage: node scripts/test-order/record-durations.mjs <results.json>  (e.g. from
// `node node_modules/vitest/vitest.mjs run --reporter=json --outputFile.json=results.json`)
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const [report] = process.argv.slice(2);
if (!report) {
  console.error('usage: record-durations.mjs <vitest results.json>');
  process.exit(2);
}
const root = join(import.meta.dirname, '..', '..');
const { testResults } = JSON.parse(readFileSync(report, 'utf8'));
const durations = Object.fromEntries(
  testResults
    .map((file) => [relative(root, file.name), Math.round((file.endTime - file.startTime) / 100) / 10])
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(join(import.meta.dirname, 'test-durations.json'), `${JSON.stringify(durations, null, 1)}\n`);
console.log(`${Object.keys(durations).length} files recorded`);
