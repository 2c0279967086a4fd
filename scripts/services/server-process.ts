import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import type { ServerRecord } from './service-state';
import { saveRecord } from './service-state';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the record's command as a child whose output goes to its log file; records the new pid. */
export function launch(record: ServerRecord): ServerRecord {
  const log = openSync(record.logFile, 'a');
  try {
    const child = spawn(record.command, [...record.args], {
      cwd: record.cwd,
      stdio: ['ignore', log, log],
      detached: false,
      ...(record.uid !== undefined ? { uid: record.uid } : {}),
      ...(record.gid !== undefined ? { gid: record.gid } : {}),
    });
    if (child.pid === undefined) throw new Error(`could not start ${record.command} for ${record.name}: is its Debian package installed? (npm run services -- up ${record.topology} installs it)`);
    // The server outlives nothing but our bookkeeping: it is stopped through its pid, not this handle.
    child.unref();
    child.on('error', () => undefined);
    record.pid = child.pid;
    record.startTicks = startTicks(child.pid);
    saveRecord(record);
    return record;
  } finally {
    closeSync(log);
  }
}

/** True while the process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The process start time in clock ticks since boot (field 22 of /proc/PID/stat); undefined when gone. */
export function startTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

/** True when the recorded pid is still the process we started (a recycled pid is never signalled). */
export function isOurs(record: ServerRecord): boolean {
  return !!record.pid && isRunning(record.pid) && startTicks(record.pid) === record.startTicks;
}

function signal(record: ServerRecord, name: NodeJS.Signals): boolean {
  if (!isOurs(record)) return false;
  try {
    process.kill(record.pid, name);
    return true;
  } catch {
    return false;
  }
}

/**
 * The record's stop signal (SIGTERM unless it names another), then SIGKILL after `graceMs`; resolves once
 * the process is gone. PostgreSQL takes SIGINT: on SIGTERM it would wait for every client to disconnect.
 */
export async function stopProcess(record: ServerRecord, graceMs = 5_000): Promise<void> {
  if (!isOurs(record)) return;
  signal(record, 'SIGCONT');
  signal(record, record.stopSignal ?? 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isRunning(record.pid) && Date.now() < deadline) await sleep(25);
  if (isRunning(record.pid)) {
    signal(record, 'SIGKILL');
    while (isRunning(record.pid) && Date.now() < deadline + 5_000) await sleep(25);
  }
}

/** A crash: SIGKILL, no chance to clean up. */
export async function killProcess(record: ServerRecord): Promise<void> {
  signal(record, 'SIGKILL');
  const deadline = Date.now() + 5_000;
  while (isRunning(record.pid) && Date.now() < deadline) await sleep(10);
}

/** A long GC pause or a frozen VM: SIGSTOP. */
export function pauseProcess(record: ServerRecord): boolean {
  return signal(record, 'SIGSTOP');
}

export function resumeProcess(record: ServerRecord): boolean {
  return signal(record, 'SIGCONT');
}
