import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const MAIN = resolve(ROOT, 'apps', 'demo-inventory', 'src', 'main.ts');

/** One running shop process. */
export interface ShopInstance {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
}

/**
 * Starts `count` shop processes with `env` (each on a free port) and resolves once all listen. Bounded:
 * an instance that does not listen within the timeout fails the start, and all are stopped.
 */
export async function startInstances(count: number, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<ShopInstance[]> {
  const started: ShopInstance[] = [];
  try {
    const all = Array.from({ length: count }, (_, i) => startInstance(`shop-${i + 1}`, env, timeoutMs));
    const settled = await Promise.allSettled(all);
    for (const result of settled) if (result.status === 'fulfilled') started.push(result.value);
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    return started;
  } catch (error) {
    await stopInstances(started);
    throw error;
  }
}

function startInstance(name: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<ShopInstance> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', MAIN], {
      cwd: ROOT,
      env: { ...process.env, ...env, PORT: '0', INSTANCE_NAME: name },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms: ${output.slice(-2000)}`));
    }, timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolvePromise({ name, port: Number(match[1]), child });
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before listening: ${output.slice(-2000)}`));
    });
  });
}

/** SIGTERM (Nest closes its lock strategies and pools), SIGKILL after a grace period. */
export async function stopInstances(instances: readonly ShopInstance[], graceMs = 10_000): Promise<void> {
  await Promise.all(
    instances.map(
      (instance) =>
        new Promise<void>((resolvePromise) => {
          if (instance.child.exitCode !== null || instance.child.signalCode !== null) return resolvePromise();
          const timer = setTimeout(() => instance.child.kill('SIGKILL'), graceMs);
          instance.child.once('exit', () => {
            clearTimeout(timer);
            resolvePromise();
          });
          instance.child.kill('SIGTERM');
        }),
    ),
  );
}
