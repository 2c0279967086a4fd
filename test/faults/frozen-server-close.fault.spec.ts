// An application shut down while its server is frozen (SIGSTOP: a stalled VM, a network that drops
// packets) must still end: close() settles within its bound with a typed error, and it leaves no socket
// open behind it, so the process ends by itself. A driver that closes its connections gracefully waits
// for the server's answer, which a frozen server never sends. Each backend here has a server of its own
// (the fault topologies), frozen whole.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { describeServers, startTopology, stopTopology, type TopologyName } from '../../scripts/services';
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
  readonly cases: ReadonlyArray<readonly [string, Shape]>;
}

/**
 * What the process does when the server freezes (see frozen-close.worker.ts): every subject in the two
 * common shapes, and one subject per driver in the rarer ones.
 */
type Shape = 'hold-and-wait' | 'idle' | 'opening' | 'replication';

/** An SQL server's subjects: each in the common shapes, `opening` and `replication` on the one named for each. */
function sqlBackend(topology: TopologyName, urlVariable: string, subjects: readonly string[], opening: string, replication: string): Backend {
  return {
    topology,
    env: (url) => ({ [urlVariable]: url }),
    cases: [...cases(subjects, ['hold-and-wait', 'idle']), [opening, 'opening'], [replication, 'replication']],
  };
}

const BACKENDS: readonly Backend[] = [
  sqlBackend('mariadb-faults', 'LOCK_TEST_MYSQL_URL', ['row (MariaDB)', 'pessimistic (MariaDB)', 'advisory GET_LOCK (MariaDB)'], 'row (MariaDB)', 'row (MariaDB)'),
  sqlBackend('postgres-faults', 'LOCK_TEST_POSTGRES_URL', ['row (PostgreSQL)', 'pessimistic (PostgreSQL)', 'advisory (PostgreSQL)'], 'advisory (PostgreSQL)', 'pessimistic (PostgreSQL)'),
  { topology: 'etcd3-faults', env: (hosts) => ({ LOCK_TEST_ETCD: hosts }), cases: cases(['etcd (single node)'], ['hold-and-wait', 'idle', 'opening']) },
];

function cases(subjects: readonly string[], shapes: readonly Shape[]): Array<readonly [string, Shape]> {
  return subjects.flatMap((subject) => shapes.map((shape) => [subject, shape] as const));
}

/**
 * How long the process may stay alive after close() settled: a pool still opening when the close gave up
 * ends at the driver's connect timeout (5 s in the contract subjects' options), the rest at once.
 */
const exitGraceMs = (shape: Shape): number => (shape === 'opening' ? 5_000 + EXIT_GRACE_MS : EXIT_GRACE_MS);

/** The processes whose parent is `pid`, from /proc (field 4 of /proc/<pid>/stat, after the command in parentheses). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // Ended meanwhile.
    }
  }
  return children;
}

/**
 * Stops (SIGSTOP) or resumes (SIGCONT) every process of the topology's servers, their children too: a
 * PostgreSQL server serves each connection from a process of its own, which a stop of the postmaster alone
 * leaves answering. A frozen machine stops them all.
 */
function signalTopology(topology: TopologyName, signal: 'SIGSTOP' | 'SIGCONT'): void {
  for (const server of describeServers().filter((entry) => entry.topology === topology && entry.running)) {
    for (const pid of [server.pid, ...childrenOf(server.pid)]) {
      try {
        process.kill(pid, signal);
      } catch {
        // Gone meanwhile.
      }
    }
  }
}

interface Closing {
  readonly closedLine: string;
  /** 'exited <code>' once the process ended by itself, or 'alive' if it had not EXIT_GRACE_MS after close settled. */
  readonly end: string;
}

/** Starts the worker, freezes `topology` once it is ready, asks it to close, and watches it end. */
function closeWhileFrozen(topology: TopologyName, subject: string, shape: Shape, env: NodeJS.ProcessEnv): Promise<Closing> {
  return new Promise((done, fail) => {
    const key = `frozen-close:${run}:${randomUUID().slice(0, 6)}`;
    const child = spawn(process.execPath, [...workerArgs(join(ROOT, 'test/support/frozen-close.worker.ts')), subject, key, shape], {
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
        signalTopology(topology, 'SIGSTOP');
        child.stdin.write('close\n');
      }
      const match = /closed .*/.exec(output);
      if (match && !closedLine) {
        closedLine = match[0];
        graceTimer = setTimeout(() => {
          child.kill('SIGKILL');
          finish('alive');
        }, exitGraceMs(shape));
      }
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL' && closedLine && !graceTimer) return;
      if (closedLine) finish(`exited ${signal ?? code}${code === 0 ? '' : `; stderr: ${stderr.slice(-1500)}`}`);
      else {
        clearTimeout(hardStop);
        fail(new Error(`${subject}: ended (${signal ?? code}) before it closed; printed: ${output}; stderr: ${stderr.slice(-1500)}`));
      }
    });
  });
}

describe('Shutting down while the server is frozen', () => {
  // Each backend freezes a server of its own: the three run side by side, each one's cases one after another.
  for (const backend of BACKENDS) {
    it.concurrent(`${backend.topology}: close() settles within its bound, and the process then ends by itself (${backend.cases.length} cases)`, async ({ expect }) => {
      const { value } = await startTopology(backend.topology);
      try {
        for (const [subject, shape] of backend.cases) {
          let closing: Closing;
          try {
            closing = await closeWhileFrozen(backend.topology, subject, shape, backend.env(value));
          } finally {
            signalTopology(backend.topology, 'SIGCONT');
          }
          const [, ms, outcomes] = closing.closedLine.split(' ');
          const what = `${subject}, ${shape}: ${closing.closedLine}`;
          // Each manager: the wait's call ends, then the strategy's own close; each step bounded by the
          // operation timeout (docs/configuration.md, "Shutdown").
          expect.soft(Number(ms), what).toBeLessThan(4 * OPERATION_TIMEOUT + 2_000);
          for (const outcome of outcomes.split(',')) expect.soft(['ok', 'LockBackendUnavailableError'], what).toContain(outcome);
          expect.soft(closing.end, what).toBe('exited 0');
        }
      } finally {
        await stopTopology(backend.topology);
      }
    }, 240_000);
  }
});
