// An application shut down while its server is frozen (SIGSTOP: a stalled VM, a network that drops
// packets) must still end: close() settles within its bound with a typed error, and it leaves no socket
// open behind it, so the process ends by itself. A driver that closes its connections gracefully waits
// for the server's answer, which a frozen server never sends. Each backend here has a server of its own
// (the fault topologies), frozen whole.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { faults, startTopology, stopTopology, type TopologyName } from '../../scripts/services';
import { workerArgs } from '../support/worker-bundles';

const ROOT = resolve(__dirname, '../..');
const run = randomUUID().slice(0, 8);
const OPERATION_TIMEOUT = 1_000;
/** How long the process may stay alive after close() settled. */
const EXIT_GRACE_MS = 3_000;

interface Backend {
  readonly topology: TopologyName;
  /** The child's variables that point the contract subjects at this backend's server. */
  readonly env: (value: string) => NodeJS.ProcessEnv;
  readonly subjects: readonly string[];
}

const BACKENDS: readonly Backend[] = [
  {
    topology: 'mariadb-faults',
    env: (url) => ({ LOCK_TEST_MYSQL_URL: url }),
    subjects: ['row (MariaDB)', 'pessimistic (MariaDB)', 'advisory GET_LOCK (MariaDB)'],
  },
  {
    topology: 'postgres-faults',
    env: (url) => ({ LOCK_TEST_POSTGRES_URL: url }),
    subjects: ['row (PostgreSQL)', 'pessimistic (PostgreSQL)', 'advisory (PostgreSQL)'],
  },
  { topology: 'etcd3-faults', env: (hosts) => ({ LOCK_TEST_ETCD: hosts }), subjects: ['etcd (single node)'] },
];

interface Closing {
  readonly closedLine: string;
  /** 'exited <code>' once the process ended by itself, or 'alive' if it had not EXIT_GRACE_MS after close settled. */
  readonly end: string;
}

/** Starts the worker, freezes `topology` once it holds and waits, asks it to close, and watches it end. */
function closeWhileFrozen(topology: TopologyName, subject: string, env: NodeJS.ProcessEnv): Promise<Closing> {
  return new Promise((done, fail) => {
    const key = `frozen-close:${run}:${randomUUID().slice(0, 6)}`;
    const child = spawn(process.execPath, [...workerArgs(join(ROOT, 'test/support/frozen-close.worker.ts')), subject, key], {
      cwd: ROOT,
      env: { ...process.env, ...env, LOCK_CLOSE_OPERATION_TIMEOUT: String(OPERATION_TIMEOUT) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let stderr = '';
    let closedLine: string | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    const hardStop = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`${subject}: no outcome within 60 s; printed: ${output}; stderr: ${stderr.slice(-1500)}`));
    }, 60_000);
    const finish = (end: string): void => {
      clearTimeout(hardStop);
      clearTimeout(graceTimer);
      done({ closedLine: closedLine ?? '', end });
    };
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready\n') && !output.includes('(asked)')) {
        output += '(asked)';
        for (const member of faults.members(topology)) faults.pause(member);
        child.stdin.write('close\n');
      }
      const match = /closed .*/.exec(output);
      if (match && !closedLine) {
        closedLine = match[0];
        graceTimer = setTimeout(() => {
          child.kill('SIGKILL');
          finish('alive');
        }, EXIT_GRACE_MS);
      }
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL' && closedLine && !graceTimer) return;
      if (closedLine) finish(`exited ${signal ?? code}`);
      else {
        clearTimeout(hardStop);
        fail(new Error(`${subject}: ended (${signal ?? code}) before it closed; printed: ${output}; stderr: ${stderr.slice(-1500)}`));
      }
    });
  });
}

describe('Shutting down while the server is frozen', () => {
  for (const backend of BACKENDS) {
    describe(backend.topology, () => {
      let value: string;

      beforeAll(async () => {
        value = (await startTopology(backend.topology)).value;
      }, 120_000);

      afterEach(() => {
        for (const member of faults.members(backend.topology)) faults.resume(member);
      });

      afterAll(async () => {
        await stopTopology(backend.topology);
      }, 60_000);

      for (const subject of backend.subjects) {
        it(`${subject}: close() settles within its bound and the process then ends by itself`, async () => {
          const { closedLine, end } = await closeWhileFrozen(backend.topology, subject, backend.env(value));
          const [, ms, outcomes] = closedLine.split(' ');
          // Each manager: the wait's call ends, then the strategy's own close; each step bounded by the
          // operation timeout (docs/configuration.md, "Shutdown").
          expect(Number(ms), closedLine).toBeLessThan(4 * OPERATION_TIMEOUT + 2_000);
          for (const outcome of outcomes.split(',')) expect(['ok', 'LockBackendUnavailableError'], closedLine).toContain(outcome);
          expect(end, closedLine).toBe('exited 0');
        }, 90_000);
      }
    });
  }
});
