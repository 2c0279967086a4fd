import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import type { RedisLockClient } from './redis-client.type';
import { redisKeySlot } from './redis-key-slot';

/** A pipeline's replies, and the server that gave them ("host:port"), e.g. to remember that it refused a command. */
export interface KeyPipelineReplies {
  readonly replies: Array<[Error | null, unknown]>;
  readonly server: string;
}

/** What the routing reads of an ioredis `Cluster`. */
type ClusterView = Pick<Cluster, 'slots' | 'nodes' | 'refreshSlotsCache'>;

/** As many redirections as ioredis follows for one command (its `maxRedirections` default). */
const MAX_REDIRECTIONS = 16;

/** How long a Cluster that answered TRYAGAIN (a slot half migrated) or CLUSTERDOWN gets before the next try, in ms (ioredis's defaults). */
const RETRY_DELAY_MS = 100;

/**
 * Runs a pipeline whose keyed commands all name `key`'s slot on the server that serves that slot. On a
 * Cluster, ioredis sends a pipeline to the node its slot map names, and follows a redirection only when
 * every other command of the pipeline was a read: a script followed by `WAIT` (a write: `WAIT` does) would
 * go on failing with MOVED after a failover or a slot move, the slot map never refreshed. So this follows
 * them itself, as ioredis does for one command: MOVED goes to the node named (and refreshes the slot map
 * for the next calls), ASK to the node named behind `ASKING`, TRYAGAIN and CLUSTERDOWN are tried again
 * after 100 ms; at most 16 times. A redirected command did not run, so sending it again is safe. The
 * commands of `build` that come after the keyed one (`WAIT`) ran on the node that redirected: they are
 * sent again too.
 */
export async function execOnKeyServer(client: RedisLockClient, key: string, build: (pipeline: ChainableCommander) => ChainableCommander): Promise<KeyPipelineReplies> {
  const cluster = clusterOf(client);
  if (!cluster) {
    const replies = await exec(build(client.pipeline()));
    return { replies, server: connectedServer(client) };
  }
  const slot = redisKeySlot(key);
  let node: Redis | undefined;
  let asking = false;
  for (let redirections = 0; ; redirections += 1) {
    const server = node ? addressOf(node) : (cluster.slots[slot]?.[0] ?? 'cluster');
    const pipeline = (node ?? client).pipeline();
    if (asking) pipeline.asking();
    const replies = await exec(build(pipeline));
    if (asking) replies.shift();
    const redirection = redirectionOf(replies[0]?.[0]);
    if (!redirection || redirections >= MAX_REDIRECTIONS) return { replies, server };
    if (redirection.kind === 'retry') {
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      continue;
    }
    // The next calls go where the slot is now (ioredis refreshes once for concurrent calls).
    if (redirection.kind === 'moved') cluster.refreshSlotsCache();
    node = cluster.nodes('all').find((candidate) => addressOf(candidate) === redirection.address);
    asking = redirection.kind === 'ask' && node !== undefined;
    // A node the client does not know yet: once the slot map is refreshed, the Cluster routes to it.
    if (!node) await new Promise<void>((resolve) => cluster.refreshSlotsCache(() => resolve()));
  }
}

/** The server a pipeline of `client` goes to: a Cluster's node of `key`'s slot, or the server the client is connected to. */
export function keyServerOf(client: RedisLockClient, key: string): string {
  const cluster = clusterOf(client);
  return cluster ? (cluster.slots[redisKeySlot(key)]?.[0] ?? 'cluster') : connectedServer(client);
}

/** True for an ioredis `Cluster`. */
export function isRedisCluster(client: RedisLockClient): boolean {
  return clusterOf(client) !== undefined;
}

function clusterOf(client: RedisLockClient): ClusterView | undefined {
  const candidate = client as unknown as Partial<ClusterView> & { isCluster?: boolean };
  return candidate.isCluster === true && typeof candidate.refreshSlotsCache === 'function' && typeof candidate.nodes === 'function' ? (candidate as ClusterView) : undefined;
}

/** "host:port" of the connection's peer (a Sentinel client's master changes with failovers), else of the options. */
function connectedServer(client: RedisLockClient): string {
  const { stream, options } = client as unknown as { stream?: { remoteAddress?: string; remotePort?: number }; options?: { host?: string; port?: number; path?: string } };
  if (stream?.remoteAddress) return `${stream.remoteAddress}:${stream.remotePort}`;
  return options?.path ?? `${options?.host ?? ''}:${options?.port ?? ''}`;
}

function addressOf(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

async function exec(pipeline: ChainableCommander): Promise<Array<[Error | null, unknown]>> {
  const replies = await pipeline.exec();
  if (!replies) throw new Error('the Redis pipeline returned no replies');
  return replies;
}

type Redirection = { kind: 'moved' | 'ask'; address: string } | { kind: 'retry' };

/** The Cluster redirection an error reply asks for, if any. */
function redirectionOf(error: Error | null | undefined): Redirection | undefined {
  if (!error) return undefined;
  const [word, , address] = error.message.split(' ');
  if (word === 'MOVED' && address) return { kind: 'moved', address };
  if (word === 'ASK' && address) return { kind: 'ask', address };
  if (word === 'TRYAGAIN' || word === 'CLUSTERDOWN') return { kind: 'retry' };
  return undefined;
}
