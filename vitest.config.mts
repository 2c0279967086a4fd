// Vitest projects: unit specs beside the code, the contract suite against the real servers, the fault
// suite, and end-to-end tests. `npm test` (scripts/run-tests.mjs) runs them all.
import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import LongestFirstSequencer from './scripts/test-order/longest-first.mts';

const root = fileURLToPath(new URL('.', import.meta.url));

// Every project resolves the workspace alias to the library's sources, as tsconfig.json's paths do.
// Decorators and their metadata (Nest's constructor injection) come from tsconfig.json, which Vite's
// TypeScript transform reads.
const common = {
  resolve: { alias: [{ find: /^@app\/distributed-lock(\/.*)?$/, replacement: `${root}libs/distributed-lock/src$1` }] },
};

interface ProjectRun {
  /** Projects run one group after the other, in this order; the files of a group share its workers. */
  readonly group: number;
  readonly workers: number;
  readonly testTimeout?: number;
  readonly exclude?: string[];
  readonly isolate?: boolean;
}

function project(name: string, include: string[], run: ProjectRun): TestProjectInlineConfiguration {
  const { group, workers, testTimeout, exclude, isolate } = run;
  return {
    ...common,
    test: { name, root, include, ...(exclude ? { exclude: ['**/node_modules/**', ...exclude] } : {}), environment: 'node', globals: true, maxWorkers: workers, sequence: { groupOrder: group }, ...(testTimeout ? { testTimeout } : {}), ...(isolate === undefined ? {} : { isolate }) },
  };
}

// Files that start a topology of their own on fixed ports and data directories (TLS, least privilege): two
// at once would both make the same server (seen: two mariadb-install-db on one data directory).
const OWN_TOPOLOGIES = ['test/integration/{etcd-secure,mariadb-tls,postgres-tls,redis-tls,secret-leak}.int.spec.ts'];

// Fault files that freeze and kill only processes of their own, on the shared servers, and check what must
// never happen (a place given twice), not how soon anything happens: they run in the contract files' pool,
// not in the fault suite, whose files run one at a time.
const OWN_PROCESS_FAULTS = ['test/faults/redis-semaphore-soak.fault.spec.ts', 'test/faults/redis-semaphore-barging-soak.fault.spec.ts'];

export default defineConfig({
  test: {
    // Servers for the contract, fault and e2e projects: started once per run, stopped at the end (see
    // scripts/services). Skipped for a unit-only run.
    globalSetup: ['test/support/global-setup.ts'],
    // The contract files four at a time: they use the shared servers under keys of their own and stop none
    // of them, and most of their time is spent waiting on leases and timers (measured: CONTRIBUTING.md). The
    // fault files one at a time,
    // after them, with nothing beside them: they freeze processes and servers and time what follows (two at
    // once missed a 1 s cron tick in one run, and left a ZooKeeper leader woken from SIGSTOP silent in another).
    // Inside a file, tests that freeze only application processes of their own, never a server, may run at
    // once (describe.concurrent): the frozen ZooKeeper sessions and the frozen waiters.
    maxWorkers: 1,
    // The longest files first, also on a fresh clone (see the sequencer).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      // In the contract files' pool: their loading is CPU the contract files, waiting on leases and timers,
      // leave free. Unit and contract files share one module graph per worker (isolate: false), as the faults
      // do: isolated, each loaded the library, Nest and every driver afresh (measured: CONTRIBUTING.md).
      project('unit', ['libs/**/*.spec.ts', 'apps/**/*.spec.ts', 'scripts/**/*.spec.ts', 'bench/**/*.spec.ts', 'test/support/**/*.spec.ts'], { group: 1, workers: 4, isolate: false }),
      project('contract', ['test/contract/**/*.spec.ts', 'test/integration/**/*.spec.ts'], { group: 1, workers: 4, exclude: OWN_TOPOLOGIES, isolate: false }),
      project('secure', OWN_TOPOLOGIES, { group: 2, workers: 1 }),
      // One worker, its files one after the other, sharing one module graph (isolate: false): isolated, each
      // file loaded the library, Nest and the drivers afresh (measured: CONTRIBUTING.md).
      project('faults', ['test/faults/**/*.spec.ts'], { group: 3, workers: 1, isolate: false, exclude: OWN_PROCESS_FAULTS }),
      project('soak', OWN_PROCESS_FAULTS, { group: 1, workers: 4 }),
      // In the contract files' pool (a group's projects share its workers): neither freezes nor times
      // anything, and the faults then end the run.
      project('e2e', ['test/e2e/**/*.spec.ts'], { group: 1, workers: 4 }),
      // Long runs, not in `npm test` (scripts/run-tests.mjs leaves them out): `npm run test:long`, which CI
      // runs after it. The contract at 20 ms of round trip, and the whole flash sales: the demo's own run (and
      // its report in a browser), the sale through server failures, and through a Sentinel failover. A step at
      // 20 ms RTT takes far longer than on loopback: 60 s per test.
      project('long', ['test/long/**/*.spec.ts'], { group: 5, workers: 1, testTimeout: 60_000 }),
    ],
  },
});
