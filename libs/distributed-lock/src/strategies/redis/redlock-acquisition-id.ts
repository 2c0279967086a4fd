import { randomUUID } from 'node:crypto';

// What a Redlock acquisition stores on the masters (the key's value, the first master's holder and its line):
// "<owner id>/<random uuid>". The owner id is there so that `LockService.query` can name the holder and the
// waiters from the masters alone; the random part keeps the record an acquisition's own, never a caller's
// owner id as it is (a caller that released and asks again must not find "its own" key still set while
// someone else holds it in its process).

/** A fresh acquisition id for a contender with owner id `owner`. */
export function newAcquisitionId(owner: string): string {
  return `${owner}/${randomUUID()}`;
}

/** The random part an acquisition id ends with. */
const RANDOM_SUFFIX = /\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The owner id in an acquisition id. An id of another form (an earlier version stored a bare random uuid,
 * which names nobody) is returned as it is: the owner id as stored, which `ownerInfo` reads as no host.
 */
export function ownerOfAcquisition(id: string): string {
  const suffix = RANDOM_SUFFIX.exec(id);
  return suffix && suffix.index > 0 ? id.slice(0, suffix.index) : id;
}
