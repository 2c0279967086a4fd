import { ensureDebianPackages, killAllNow, packagesFor, startTopology, topologiesGivenByEnvironment, type TopologyName } from '../../scripts/services';

/**
 * The topologies every run needs, the ZooKeeper ensemble and the etcd cluster included: several suites
 * run against them at once, and a suite that started one itself would restart it under the others.
 * (Fault suites start their own, which they kill.)
 */
export const BASE_TOPOLOGIES: readonly TopologyName[] = ['redis', 'redis5', 'mariadb', 'zookeeper', 'etcd', 'zookeeper3', 'etcd3'];

/**
 * Jest global setup: installs missing server packages (apt, as root), starts throwaway servers on
 * loopback, and exports their addresses as LOCK_TEST_* variables to the test workers. A variable that is
 * already set points at the user's own server instead. Skipped for a unit-only run, or with
 * LOCK_TEST_SERVICES=none.
 */
export default async function globalSetup(): Promise<void> {
  const projects = selectedProjects(process.argv);
  if (process.env.LOCK_TEST_SERVICES === 'none' || (projects.length > 0 && projects.every((name) => name === 'unit'))) return;
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
  ensureDebianPackages(packagesFor([...BASE_TOPOLOGIES, 'redis-sentinel']), (line) => process.stdout.write(`${line}\n`));
  const started = Date.now();
  const running = await Promise.all(BASE_TOPOLOGIES.map((name) => startTopology(name)));
  const parts = running.map((t) => `${t.name} ${t.managed ? `${t.startupMs} ms` : `(yours: ${t.envVar})`}`);
  process.stdout.write(`\n[services] ready in ${Date.now() - started} ms: ${parts.join(', ')}\n`);
}

/**
 * The project names after `--selectProjects` on Jest's command line (its global config does not carry
 * them); test paths given after them are skipped.
 */
export function selectedProjects(argv: readonly string[]): string[] {
  const at = argv.indexOf('--selectProjects');
  if (at < 0) return [];
  const names: string[] = [];
  for (const arg of argv.slice(at + 1)) {
    if (arg.startsWith('-')) break;
    // A test path (it names a file or folder), not a project.
    if (!/[/.]/.test(arg)) names.push(arg);
  }
  return names;
}
