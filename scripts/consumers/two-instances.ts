// Two instances of a consumer app on one counter: both boot, both say "ready", both are told "go" at
// once, each runs its increments; then the counter must equal the sum (or, for the unlocked control,
// must not: the check can fail).
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { envFor, type NodeBinary } from './node-binaries';

const INSTANCES = 2;
const CALLS_PER_INSTANCE = 100;
const BOOT_TIMEOUT_MS = 60_000;
const RUN_TIMEOUT_MS = 120_000;

export interface TwoInstancesResult {
  readonly expected: number;
  readonly counted: number;
  readonly ms: number;
}

export async function runTwoInstances(options: {
  appDir: string;
  node: NodeBinary;
  redisUrl: string;
  mode: string;
  env?: Record<string, string>;
}): Promise<TwoInstancesResult> {
  const counter = `${options.mode}-${options.node.major}-${process.pid}-${Date.now()}`;
  const redis = new Redis(options.redisUrl);
  const started = Date.now();
  try {
    await redis.del(`consumer:${counter}`);
    const env = envFor(options.node, {
      ...options.env,
      REDIS_URL: options.redisUrl,
      COUNTER_NAME: counter,
      CALLS: String(CALLS_PER_INSTANCE),
      LOCKS: options.mode,
    });
    const children = Array.from({ length: INSTANCES }, () =>
      spawn('node', ['dist/scenario.js'], { cwd: options.appDir, env, stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    const exits = children.map(exitOf);
    try {
      await Promise.race([withTimeout(Promise.all(children.map(readyOf)), BOOT_TIMEOUT_MS, 'boot'), ...exits.map(failIfEarly)]);
      for (const child of children) child.stdin?.write('go\n');
      await withTimeout(Promise.all(exits), RUN_TIMEOUT_MS, 'run');
    } finally {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    }
    const counted = Number((await redis.get(`consumer:${counter}`)) ?? 0);
    return { expected: INSTANCES * CALLS_PER_INSTANCE, counted, ms: Date.now() - started };
  } finally {
    await redis.del(`consumer:${counter}`).catch(() => undefined);
    redis.disconnect();
  }
}

function readyOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    let seen = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('ready\n')) resolve();
    });
  });
}

function exitOf(child: ChildProcess): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`instance exited with ${code ?? signal}:\n${stderr.slice(-4_000)}`)),
    );
  });
}

/** An instance that exits before every instance is ready fails the run now, not at the boot timeout. */
async function failIfEarly(exit: Promise<void>): Promise<never> {
  await exit;
  throw new Error('an instance exited before the others were ready');
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
