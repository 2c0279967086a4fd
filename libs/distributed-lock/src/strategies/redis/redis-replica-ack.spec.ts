import { LockNotReplicatedError } from '../../errors/lock-not-replicated.error';
import type { RedisLockClient } from './redis-client.type';
import { ReplicaAck } from './redis-replica-ack';
import type { RedisScript, ScriptThenWait } from './redis-script';

type AnyScript = RedisScript<[], unknown>;

/** An error reply of the server's, as ioredis gives it. */
function reply(message: string): Error {
  return Object.assign(new Error(message), { name: 'ReplyError' });
}

/** A client connected to `server` ("host:port"), for the refusal memory; it is never called. */
function clientOn(server: string): RedisLockClient {
  const [remoteAddress, remotePort] = server.split(':');
  return { stream: { remoteAddress, remotePort: Number(remotePort) } } as unknown as RedisLockClient;
}

/** A script whose WAIT answers `waited`, counting its runs. */
function scriptAnswering(waited: (server: string) => number | Error): AnyScript & { runs: number } {
  const script = {
    runs: 0,
    runThenWait(client: RedisLockClient): Promise<ScriptThenWait<unknown>> {
      script.runs += 1;
      const { remoteAddress, remotePort } = (client as unknown as { stream: { remoteAddress: string; remotePort: number } }).stream;
      const server = `${remoteAddress}:${remotePort}`;
      return Promise.resolve({ reply: [1, 7], waited: waited(server), server });
    },
  };
  return script as unknown as AnyScript & { runs: number };
}

describe('ReplicaAck', () => {
  const run = (ack: ReplicaAck, client: RedisLockClient, script: AnyScript, gaveBack: string[]): Promise<unknown> =>
    ack.run(client, script, ['k'], [], () => Promise.resolve(gaveBack.push('given back')), 'k', 'acquire');

  it('remembers a refusal of WAIT for the server that refused it, and for no other', async () => {
    const ack = new ReplicaAck({ replicas: 1 }, 'redis');
    const script = scriptAnswering((server) => (server === '10.0.0.1:6379' ? reply("ERR unknown command 'wait'") : 1));
    const gaveBack: string[] = [];
    await expect(run(ack, clientOn('10.0.0.1:6379'), script, gaveBack)).rejects.toMatchObject({ reason: 'wait-unsupported' });
    expect(gaveBack).toEqual(['given back']);
    // Known now for that server: refused without a round trip.
    await expect(run(ack, clientOn('10.0.0.1:6379'), script, gaveBack)).rejects.toBeInstanceOf(LockNotReplicatedError);
    expect(script.runs).toBe(1);
    // Another server (the replica Sentinel promoted) is asked.
    await expect(run(ack, clientOn('10.0.0.2:6379'), script, gaveBack)).resolves.toEqual({ reply: [1, 7], acknowledged: 1 });
    expect(script.runs).toBe(2);
  });

  it('takes a dropped connection or a passing reply for a failed call, not for a refusal', async () => {
    const ack = new ReplicaAck({ replicas: 1 }, 'redis');
    const answers: Error[] = [
      Object.assign(new Error('Command aborted due to connection close'), { name: 'AbortError' }),
      Object.assign(new Error('Reached the max retries per request limit (which is 2).'), { name: 'MaxRetriesPerRequestError' }),
      reply('ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 …'),
      reply("READONLY You can't write against a read only replica."),
      reply('LOADING Redis is loading the dataset in memory'),
    ];
    for (const answer of answers) {
      const gaveBack: string[] = [];
      await expect(run(ack, clientOn('10.0.0.1:6379'), scriptAnswering(() => answer), gaveBack)).rejects.toBe(answer);
      expect(gaveBack).toEqual(['given back']);
    }
    const script = scriptAnswering(() => 1);
    await expect(run(ack, clientOn('10.0.0.1:6379'), script, [])).resolves.toEqual({ reply: [1, 7], acknowledged: 1 });
    expect(script.runs).toBe(1);
  });
});
