// A Sentinel-backed strategy that is closed leaves no connection behind, so the process that closed it can end.
// ioredis's failover detector (which the strategy turns on for Sentinel clients, see redis-connection.ts)
// subscribes to each Sentinel on connections of its own, and QUIT leaves them open (redis/ioredis#1362): an
// application shut down cleanly stayed alive, and its client kept reconnecting once the Sentinel was gone.
// A fault file: it starts the Sentinel topology of its own, as redis-fencing.fault.spec.ts does, one file at a time.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { ensureDebianPackages, packagesFor, startTopology, stopTopology } from '../../scripts/services';

const ROOT = resolve(__dirname, '../..');

/** A script that takes a lock with a waiter behind it (so the strategy also opens its subscriber), then closes everything. */
function closingApp(host: string, port: number, masterName: string, key: string): string {
  return `
const { LockManager, LockService } = require('./libs/distributed-lock/src');
const { RedisLockStrategy } = require('./libs/distributed-lock/src/strategies/redis');
(async () => {
  const connection = { sentinels: [{ host: ${JSON.stringify(host)}, port: ${port} }], name: ${JSON.stringify(masterName)} };
  const manager = new LockManager(new RedisLockStrategy({ connection }));
  const locks = new LockService(manager);
  const held = await locks.acquire(${JSON.stringify(key)});
  const waiting = locks.acquire(${JSON.stringify(key)}, { waitTimeout: 10000 });
  setTimeout(() => void held.release(), 200);
  await (await waiting).release();
  await manager.close();
  process.stdout.write('closed\\n');
})().catch((error) => {
  process.stderr.write(String(error && error.stack) + '\\n');
  process.exit(2);
});`;
}

/** Runs `script` in a fresh Node process; resolves its exit code, or 'alive' if it has not ended `graceMs` after printing "closed". */
function runToEnd(script: string, graceMs: number): Promise<{ code: number | 'alive'; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let timer: NodeJS.Timeout | undefined;
    // Bounded also when the script never gets to its close.
    const hardStop = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('closed') && !timer) {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          done({ code: 'alive', output });
        }, graceMs);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', fail);
    child.on('exit', (code) => {
      clearTimeout(timer);
      clearTimeout(hardStop);
      done({ code: code ?? -1, output });
    });
  });
}

describe('Redis through Sentinel: closing the strategy', () => {
  let address: URL;

  beforeAll(async () => {
    ensureDebianPackages(packagesFor(['redis-sentinel']), (line) => process.stdout.write(`${line}\n`));
    address = new URL((await startTopology('redis-sentinel')).value);
  }, 120_000);

  afterAll(async () => {
    await stopTopology('redis-sentinel');
  }, 30_000);

  it('closes every connection it opened, the failover detector\'s too: the process ends by itself', async () => {
    const script = closingApp(address.hostname, Number(address.port), address.pathname.slice(1), `sentinel-close:${randomUUID()}`);
    const { code, output } = await runToEnd(script, 5_000);
    expect(output).toContain('closed');
    expect(code).toBe(0);
  }, 90_000);
});
