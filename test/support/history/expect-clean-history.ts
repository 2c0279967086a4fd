import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkHistory, type CheckResult } from './check-history';
import { checkPermits, type PermitCheckResult } from './check-permits';
import { HistoryLog } from './history-log';

/**
 * A fresh history for one fault scenario, in a file every process of the scenario can append to (give
 * holder processes its path in `LOCK_HISTORY_FILE`).
 */
export function newHistory(scenario: string): HistoryLog {
  const safe = scenario.replace(/[^\w.-]+/g, '-').slice(0, 80);
  return new HistoryLog(join(process.env.LOCK_HISTORY_DIR ?? join(tmpdir(), 'lock-histories'), `${safe}-${randomUUID().slice(0, 8)}.jsonl`));
}

/**
 * Checks the scenario's history (see `checkHistory`) and fails the test on any anomaly, listing them. With
 * `LOCK_HISTORY_REPORT` set, appends one summary line per checked history to that file (the README's
 * table is made from it).
 */
export function expectCleanHistory(log: HistoryLog, scenario: string): CheckResult {
  const result = checkHistory(log.read());
  if (process.env.LOCK_HISTORY_REPORT) {
    appendFileSync(process.env.LOCK_HISTORY_REPORT, `${JSON.stringify({ scenario, holds: result.holds, writes: result.writes, keys: result.keys, anomalies: result.anomalies.length })}\n`);
  }
  expect(result.anomalies).toEqual([]);
  return result;
}

/**
 * `expectCleanHistory` for the permits of a semaphore of `permits` places (see `checkPermits`): fails the
 * test on any anomaly, listing them, and reports like it.
 */
export function expectCleanPermits(log: HistoryLog, scenario: string, permits: number): PermitCheckResult {
  const result = checkPermits(log.read(), permits);
  if (process.env.LOCK_HISTORY_REPORT) {
    appendFileSync(process.env.LOCK_HISTORY_REPORT, `${JSON.stringify({ scenario, holds: result.holds, writes: 0, keys: result.keys, anomalies: result.anomalies.length })}\n`);
  }
  expect(result.anomalies).toEqual([]);
  return result;
}
