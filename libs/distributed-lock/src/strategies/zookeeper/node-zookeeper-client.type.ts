import type { Socket } from 'node:net';

// The part of `node-zookeeper-client` (1.1.x, an optional peer dependency; it ships no types) that the
// strategy uses: its public API, and three fields of its connection manager (see `ConnectionInternals`).

/** A ZooKeeper error as the package reports it. */
export interface NzkException {
  getCode(): number;
  getName(): string;
}

/** A stat as the package decodes it: zxids are 8-byte big-endian buffers. */
export interface NzkStat {
  readonly czxid: Buffer;
  readonly pzxid: Buffer;
  readonly cversion: number;
  readonly version: number;
}

export interface NzkEvent {
  getType(): number;
}

export type NzkWatcher = (event: NzkEvent) => void;
type Callback<T extends unknown[]> = (error: NzkException | null, ...result: T) => void;

/** ZooKeeper's connection states as the package's connection manager numbers them. */
export const NZK_STATES = Object.freeze({ CONNECTED: 2, CLOSING: -1, CLOSED: -2 });

/**
 * The package's connection manager, the fields the adapter reads and the handlers it wraps: the socket of the
 * current attempt, the state, the bound the package gives one server to accept a TCP connection and that
 * bound's timer, the bytes of a reply not read whole yet, and the socket's data and close handlers (bound to
 * each new socket when it is made), and its `connect` and `findNextServer` (a reconnect, and the next socket it
 * opens on a later tick). The package has no read timeout, keeps a partial reply across sockets, throws from
 * its data handler on a reply it cannot parse, and reconnects without looking whether it was closed: see
 * `ZooKeeperClient`.
 */
export interface ConnectionInternals {
  readonly socket?: Socket;
  readonly state: number;
  readonly connectTimeout: number;
  readonly connectTimeoutHandler: NodeJS.Timeout | null;
  pendingBuffer: Buffer | null;
  onSocketData(buffer: Buffer): void;
  onSocketClosed(hadError: boolean): void;
  connect(): void;
  findNextServer(use: (server: unknown) => void): void;
  setState(state: number): void;
}

export interface NzkClient {
  connect(): void;
  close(): void;
  getSessionTimeout(): number;
  addAuthInfo(scheme: string, auth: Buffer): void;
  on(event: 'connected' | 'disconnected' | 'expired' | 'authenticationFailed', listener: () => void): unknown;
  create(path: string, data: Buffer, acls: readonly unknown[], mode: number, callback: Callback<[string]>): void;
  remove(path: string, version: number, callback: Callback<[]>): void;
  setData(path: string, data: Buffer, version: number, callback: Callback<[NzkStat]>): void;
  exists(path: string, watcher: NzkWatcher | undefined, callback: Callback<[NzkStat | null]>): void;
  getData(path: string, watcher: NzkWatcher | undefined, callback: Callback<[Buffer | null, NzkStat]>): void;
  getChildren(path: string, watcher: NzkWatcher | undefined, callback: Callback<[string[], NzkStat]>): void;
  setACL(path: string, acls: readonly unknown[], version: number, callback: Callback<[NzkStat]>): void;
  transaction(): NzkTransaction;
  readonly connectionManager: ConnectionInternals;
}

/** A multi-operation: the strategy only sends a version check (see `ZooKeeperClient.sync`). */
export interface NzkTransaction {
  check(path: string, version: number): NzkTransaction;
  commit(callback: Callback<[unknown]>): void;
}

export interface NzkModule {
  createClient(connect: string, options: { sessionTimeout: number; spinDelay: number; retries: number }): NzkClient;
  readonly ACL: { new (permission: number, id: unknown): unknown; readonly OPEN_ACL_UNSAFE: readonly unknown[] };
  readonly Id: new (scheme: string, id: string) => unknown;
}
