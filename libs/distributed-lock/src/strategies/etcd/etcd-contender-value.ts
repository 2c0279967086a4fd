// A lock contender's key holds its owner id. `breakLock` rewrites it with a mark before it deletes the key,
// so that the holder's watch on its own key can tell a break from any other removal. The mark starts with
// a NUL character, which no owner id contains.

const BROKEN_MARK = '\u0000broken:';

/** The value `breakLock` puts on a holder's key before deleting it. */
export function brokenValue(owner: string): string {
  return `${BROKEN_MARK}${owner}`;
}

/** True for a value `breakLock` marked. */
export function isBrokenValue(value: Buffer | string): boolean {
  return value.toString().startsWith(BROKEN_MARK);
}

/** The owner id a contender's value names, marked or not. */
export function ownerOfValue(value: Buffer | string): string {
  const text = value.toString();
  return text.startsWith(BROKEN_MARK) ? text.slice(BROKEN_MARK.length) : text;
}
