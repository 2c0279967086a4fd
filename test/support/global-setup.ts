import type { TestProject } from 'vitest/node';
import { buildWorkerBundles, removeWorkerBundles } from './worker-bundles';
import { ensureDebianPackages, killAllNow, packagesFor, SHARED_TOPOLOGIES, startTopology, stopAll, topologiesGivenByEnvironment, type TopologyName } from '../../scripts/services';

/** This run's bundles of the worker processes (see worker-bundles.ts). */
let bundles: string | undefined;

/**
 * Vitest global setup: installs missing server packages (apt, as root), starts throwaway servers on
 * loopback, and exports their addresses as LOCK_TEST_* variables to the test workers. A variable that is
 * already set points at the user's own server instead. Skipped for a unit-only run, or with
 * LOCK_TEST_SERVICES=none.
 */
export async function setup(project: TestProject): Promise<void> {
  const projects = project.vitest.config.project ?? [];
  if (projects.length > 0 && projects.every((name) => name === 'unit')) return;
  bundles = await buildWorkerBundles(project.vitest.config.watch);
  if (process.env.LOCK_TEST_SERVICES === 'none') return;
  // Interrupted runs must not leave servers behind: kill synchronously, since exit handlers cannot await.
  // Servers the user brought up (their variables are set) outlive the run: the teardown keeps them.
  const keep = topologiesGivenByEnvironment();
  process.env.LOCK_TEST_KEEP_TOPOLOGIES = keep.join(',');
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAllNow(keep);
      process.exit(130);
    });
  }
  process.once('exit', () => killAllNow(keep));
  ensureDebianPackages(packagesFor([...SHARED_TOPOLOGIES, 'redis-sentinel', 'etcd-secure']), (line) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const running = await Promise.all(SHARED_TOPOLOGIES.map((name) => startTopology(name)));
  const parts = running.map((t) => `${t.name} ${t.managed ? `${t.startupMs} ms` : `(yours: ${t.envVar})`}`);
  process.stdout.write(`\n[services] ready in ${Date.now() - started} ms: ${parts.join(', ')}\n`);
}

/**
 * Stops every server this machine's runs started, except the ones the user brought up and pointed the
 * run at through their variables (recorded by the setup). Does nothing when the setup started nothing (a
 * unit-only run), so that it never stops servers another run is using.
 */
export async function teardown(): Promise<void> {
  removeWorkerBundles(bundles);
  const keepList = process.env.LOCK_TEST_KEEP_TOPOLOGIES;
  if (keepList === undefined) return;
  await stopAll(keepList.split(',').filter(Boolean) as TopologyName[]);
}
