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
      if (!isNoScript(error)) throw error;
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }

  /**
   * Runs the script and `WAIT replicas timeoutMs` behind it in one pipeline: one round trip, on one
   * connection (the node of `keys` on a Cluster). Resolves the script's reply and `WAIT`'s (the number of
   * replicas that acknowledged), or the error the server answered `WAIT` with. Rejects with the script's error.
   */
  async runThenWait(client: Pick<RedisLockClient, 'pipeline'>, keys: readonly string[], args: ReadonlyArray<string | number>, replicas: number, timeoutMs: number): Promise<[unknown, number | Error]> {
    let results = await client.pipeline().evalsha(this.sha, keys.length, ...keys, ...args).wait(replicas, timeoutMs).exec();
    if (results && isNoScript(results[0][0])) {
      results = await client.pipeline().eval(this.source, keys.length, ...keys, ...args).wait(replicas, timeoutMs).exec();
    }
    if (!results || results.length !== 2) throw new Error('the Redis pipeline of a script and WAIT returned no replies');
    const [[scriptError, reply], [waitError, acknowledged]] = results;
    if (scriptError) throw scriptError;
    return [reply, waitError ?? Number(acknowledged)];
  }
}

function isNoScript(error: unknown): boolean {
  return String((error as Error | null)?.message).startsWith('NOSCRIPT');
}
