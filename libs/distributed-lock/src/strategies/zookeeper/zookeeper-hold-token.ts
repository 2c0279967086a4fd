/**
 * The most times one hold of a lock node may be passed on within a process (`localHandover.passes`): the
 * pass is the low part of the fencing token, which has 7 bits for it.
 */
export const ZK_MAX_PASSES = 127;

/** The token's factor for the zxid: room for passes 0 to ZK_MAX_PASSES below the next zxid's token. */
const PASS_ROOM = ZK_MAX_PASSES + 1;

/**
 * Zxids below this give exact tokens (a token stays below 2^53). A zxid is epoch << 32 | counter, so this
 * is 16,384 leader elections of the ensemble.
 */
const LARGEST_ZXID = 2 ** 46;

/**
 * The fencing token of a lock node's hold: the zxid that granted its node (its create), scaled, plus how
 * many times the hold was passed to another contender of the holder's process since (`transfer`). A pass
 * mints no zxid, yet its token is above the one it follows and below every later grant from the queue:
 * every node queued behind was created after the node passed on, with a higher zxid.
 */
export function zkFencingToken(zxid: number, pass: number): number {
  if (zxid >= LARGEST_ZXID) throw new RangeError(`ZooKeeper zxid ${zxid} is too large for an exact fencing token (epochs past 16,383).`);
  return zxid * PASS_ROOM + pass;
}

/** What a contender node's data says of its hold: whose it is, and how many times it was passed on. */
export interface HoldData {
  readonly owner: string;
  readonly pass: number;
}

/** The prefix of a passed hold's data; an owner id never contains it (host, pid, instance name, uuid). */
const PASSED = '\u0000pass:';

/**
 * A contender node's data: its owner id as it was created, or after a pass the pass number and the new
 * owner id, so that a query names the holder and its exact token.
 */
export function encodeHoldData(hold: HoldData): string {
  return hold.pass === 0 ? hold.owner : `${PASSED}${hold.pass}:${hold.owner}`;
}

/** Reads `encodeHoldData`'s encoding back; any other data is an owner id with no pass. */
export function decodeHoldData(data: string): HoldData {
  if (!data.startsWith(PASSED)) return { owner: data, pass: 0 };
  const colon = data.indexOf(':', PASSED.length);
  const pass = Number(data.slice(PASSED.length, colon));
  return colon < 0 || !Number.isInteger(pass) ? { owner: data, pass: 0 } : { owner: data.slice(colon + 1), pass };
}
