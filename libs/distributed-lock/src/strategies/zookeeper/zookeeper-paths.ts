/**
 * The znode of a lock: the key URI-encoded (so it holds no "/"), with "." encoded too, so that neither
 * "." nor ".." (invalid znode names) can appear and the mapping stays one-to-one.
 */
export function zkLockPath(base: string, key: string): string {
  return `${base}/${encodeURIComponent(key).replace(/\./g, '%2E')}`;
}

/** Contender node name prefix: a protection id (to find our node after a lost create) and the mode. */
export function zkContenderPrefix(protectionId: string, mode: 'exclusive' | 'shared'): string {
  return `_c_${protectionId}-${mode === 'shared' ? 'read' : 'write'}-`;
}

/** The sequence number ZooKeeper appended (the last 10 digits). */
export function zkSequence(name: string): number {
  return Number(name.slice(-10));
}

export function isZkWriter(name: string): boolean {
  return /-write-\d{10}$/.test(name);
}

/**
 * The znode of a semaphore: beside the locks under the base, named "sem:" and the key encoded as for a lock.
 * A lock's name never holds ":" (encoded), so no lock and no semaphore share a node.
 */
export function zkSemaphorePath(base: string, key: string): string {
  return `${base}/sem:${encodeURIComponent(key).replace(/\./g, '%2E')}`;
}
