import { createHash } from 'node:crypto';
import type { RedisLockClient } from './redis-client.type';

/** A Lua script run by SHA (no script text on the wire), falling back to EVAL when the server's cache is empty. */
export class RedisScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Pick<RedisLockClient, 'evalsha' | 'eval'>, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      // After a restart, failover or SCRIPT FLUSH the cache is empty; EVAL loads the script again.
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
