import { ensureDebianPackages, killAllNow, packagesFor, startTopology, topologiesGivenByEnvironment, type TopologyName } from '../../scripts/services';

/** The topologies every run needs; ensembles and clusters are started by the suites that use them. */
export const BASE_TOPOLOGIES: readonly TopologyName[] = ['redis', 'redis5', 'mariadb', 'zookeeper', 'etcd'];

/**
 * Jest global setup: installs missing server packages (apt, as root), starts throwaway servers on
 * loopback, and exports their addresses as LOCK_TEST_* variables to the test workers. A variable that is
 * already set points at the user's own server instead. Skipped for a unit-only run, or with
 * LOCK_TEST_SERVICES=none.
 */
export default async function globalSetup(globalConfig: { selectProjects?: string[] }): Promise<void> {
  const projects = globalConfig.selectProjects;
  if (process.env.LOCK_TEST_SERVICES === 'none' || (projects && projects.every((name) => name === 'unit'))) return;
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
  ensureDebianPackages(packagesFor([...BASE_TOPOLOGIES, 'zookeeper3', 'etcd3', 'redis-sentinel']), (line) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const running = await Promise.all(BASE_TOPOLOGIES.map((name) => startTopology(name)));
  const parts = running.map((t) => `${t.name} ${t.managed ? `${t.startupMs} ms` : `(yours: ${t.envVar})`}`);
  process.stdout.write(`\n[services] ready in ${Date.now() - started} ms: ${parts.join(', ')}\n`);
}
