/** Settings shared by the leader-election app process and the test that drives it. Durations in ms. */

/** The leader's lease: renewed every second while it lives. */
export const LEADER_TTL_MS = 3_000;


/** The fenced resource each election's leaders write to. */
export const fencedResourceOf = (run: string, strategy: string): string => `leader-${run}-${strategy}`;
