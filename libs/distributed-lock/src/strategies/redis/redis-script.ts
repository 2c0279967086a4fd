import { createHash } from 'node:crypto';
import type { RedisLockClient } from './redis-client.type';
import { execOnKeyServer } from './redis-key-pipeline';

/** What a script's arguments may be: Redis gets every one as a string. */
export type ScriptArgs = ReadonlyArray<string | number | undefined>;

/**
 * A Lua script with the arguments it takes and the reply it gives, declared where the script is written
 * (`lua<[owner: string, ttlMs: number], 0 | 1>(source)`): callers read typed replies, no cast of their own.
 */
export interface LuaScript<Args extends ScriptArgs, Reply> {
  readonly source: string;
  /** Never set: it carries the types. */
  readonly signature?: (args: Args) => Reply;
}

/** Declares a Lua script's arguments and reply (see `LuaScript`). */
export function lua<Args extends ScriptArgs, Reply>(source: string): LuaScript<Args, Reply> {
  return { source };
}

/** A Lua script run by SHA (no script text on the wire), falling back to EVAL when the server's cache is empty. */
export class RedisScript<Args extends ScriptArgs, Reply> {
  private readonly sha: string;
  private readonly source: string;

  constructor(script: LuaScript<Args, Reply>) {
    this.source = script.source;
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  async run(client: Pick<RedisLockClient, 'evalsha' | 'eval'>, keys: readonly string[], args: Args): Promise<Reply> {
    const values = present(args);
    try {
      return (await client.evalsha(this.sha, keys.length, ...keys, ...values)) as Reply;
    } catch (error) {
      // After a restart, failover or SCRIPT FLUSH the cache is empty; EVAL loads the script again.
      if (!isNoScript(error)) throw error;
      return (await client.eval(this.source, keys.length, ...keys, ...values)) as Reply;
    }
  }

  /**
   * Runs the script and `WAIT replicas timeoutMs` behind it in one pipeline: one round trip, on one
   * connection (the node of `keys` on a Cluster, following its redirections: see execOnKeyServer).
   * Resolves the script's reply, `WAIT`'s (the number of replicas that acknowledged) or the error it failed
   * with (an error reply of the server's, or the client's when the connection closed first), and the
   * server that answered. Rejects with the script's error.
   */
  async runThenWait(client: RedisLockClient, keys: readonly string[], args: Args, replicas: number, timeoutMs: number): Promise<ScriptThenWait<Reply>> {
    const values = present(args);
    let { replies, server } = await execOnKeyServer(client, keys[0], (pipeline) => pipeline.evalsha(this.sha, keys.length, ...keys, ...values).wait(replicas, timeoutMs));
    if (isNoScript(replies[0][0])) {
      ({ replies, server } = await execOnKeyServer(client, keys[0], (pipeline) => pipeline.eval(this.source, keys.length, ...keys, ...values).wait(replicas, timeoutMs)));
    }
    if (replies.length !== 2) throw new Error('the Redis pipeline of a script and WAIT returned no replies');
    const [[scriptError, reply], [waitError, acknowledged]] = replies;
    if (scriptError) throw scriptError;
    return { reply: reply as Reply, waited: waitError ?? Number(acknowledged), server };
  }
}

/** The arguments given (an optional last one left out is not sent). */
function present(args: ScriptArgs): Array<string | number> {
  return args[args.length - 1] === undefined ? (args.filter((arg) => arg !== undefined) as Array<string | number>) : (args as Array<string | number>);
}

/** What `RedisScript.runThenWait` resolves. */
export interface ScriptThenWait<Reply> {
  readonly reply: Reply;
  /** How many replicas acknowledged, or the error `WAIT` failed with. */
  readonly waited: number | Error;
  /** "host:port" of the server that ran both. */
  readonly server: string;
}

function isNoScript(error: unknown): boolean {
  return String((error as Error | null)?.message).startsWith('NOSCRIPT');
}
