import { readFileSync } from 'node:fs';
import { monotonicNow } from './history/hold-history';

/** The state letter of `/proc/<pid>/stat`: 'T' (or 't' when traced) once the process is stopped. */
function stateOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name in parentheses may hold spaces and parentheses: the state follows its last ')'.
  return stat.charAt(stat.lastIndexOf(')') + 2);
}

/**
 * Sends SIGSTOP and resolves with the moment (`monotonicNow`) the process is seen stopped. `kill()` returns
 * before the signal has stopped it: a process on the other core runs on for a moment, and what it records
 * then (a section's first line) comes after a time read before the kill. The time read once it is seen
 * stopped is after everything it did, which is what a history's freeze must be.
 */
export async function stopProcess(pid: number, withinMs = 2_000): Promise<string> {
  process.kill(pid, 'SIGSTOP');
  const giveUpAt = Date.now() + withinMs;
  for (;;) {
    const state = stateOf(pid);
    if (state === 'T' || state === 't') return monotonicNow();
    if (Date.now() > giveUpAt) throw new Error(`process ${pid} not stopped ${withinMs} ms after SIGSTOP (state ${state})`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
