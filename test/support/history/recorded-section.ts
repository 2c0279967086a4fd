import type { AcquireOptions, Lock, LockService } from '@app/distributed-lock';
import type { HistoryLog } from './history-log';

/**
 * `withLock` with its hold recorded in `log`: the section's first and last line, the moment its holder is
 * told the lock was lost, and how the call ended (resolved, or the error's name). What is recorded is the
 * holder's own view: it acts as the holder from the first line of its section to its last.
 */
export async function recordedWithLock<T>(
  log: HistoryLog,
  holder: string,
  service: LockService,
  key: string,
  fn: (lock: Lock) => T | Promise<T>,
  options?: AcquireOptions,
): Promise<T> {
  let hold: ReturnType<HistoryLog['begin']> | undefined;
  try {
    const result = await service.withLock(
      key,
      async (lock) => {
        hold = log.begin(holder, lock);
        try {
          return await fn(lock);
        } finally {
          hold.sectionEnded();
        }
      },
      options,
    );
    hold?.outcome('resolved');
    return result;
  } catch (error) {
    hold?.outcome((error as Error)?.name ?? 'Error');
    throw error;
  }
}
