import type { LockInspection } from '../../locking/lock-query';
import type { InspectReply } from './redis-lock.scripts';

/** The most waiters a query lists: a queue longer than this is cut, never read whole in one script. */
export const QUERY_WAITERS_LIMIT = 1_000;

/**
 * A lock's inspection from INSPECT_SCRIPT's reply, its times moved from the server's clock onto this
 * process's: `localNow` (the middle of the call's round trip) stands for the server's `now` in it.
 */
export function inspectionOf(reply: InspectReply, localNow: number): LockInspection {
  const [now, writer, token, grantedAt, pttl, readers, waiters] = reply;
  const serverNow = Number(now);
  const local = (serverMs: number): number => localNow + (serverMs - serverNow);
  const holders: Array<LockInspection['holders'][number]> = [];
  if (writer !== '') {
    holders.push({
      owner: writer,
      mode: 'exclusive',
      ...(token !== '' && token !== '0' ? { fencingToken: Number(token) } : {}),
      ...(grantedAt !== '' ? { grantedAt: local(Number(grantedAt)) } : {}),
      ...(pttl >= 0 ? { expiresAt: localNow + pttl } : {}),
    });
  }
  for (let i = 0; i + 2 < readers.length; i += 3) {
    const readerToken = readers[i + 2];
    holders.push({ owner: readers[i], mode: 'shared', expiresAt: local(Number(readers[i + 1])), ...(readerToken !== '' && readerToken !== '0' ? { fencingToken: Number(readerToken) } : {}) });
  }
  const queued: Array<{ owner: string; mode: 'exclusive' | 'shared' }> = [];
  for (let i = 0; i + 1 < waiters.length; i += 2) queued.push({ owner: waiters[i], mode: waiters[i + 1] === 's' ? 'shared' : 'exclusive' });
  return { holders, waiters: queued };
}
