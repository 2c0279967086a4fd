import { ensureDebianPackages } from './debian-packages';
import { packagesFor, startTopology, stopTopology, topologiesGivenByEnvironment, type RunningTopology, type TopologyName } from './topologies';

/**
 * Starts several topologies for a script that is not the test run (the consumer apps, the demo): installs the
 * Debian packages of those it will start (not of those the environment points at the user's own servers), starts
 * them side by side, and, if one fails to start, stops the ones that did before rethrowing, so that no server
 * outlives a failed start. The caller stops the managed ones it gets back (`stopStarted`).
 */
export async function startTopologies(names: readonly TopologyName[], log: (line: string) => void): Promise<RunningTopology[]> {
  const yours = topologiesGivenByEnvironment();
  ensureDebianPackages(packagesFor(names.filter((name) => !yours.includes(name))), log);
  const outcomes = await Promise.allSettled(names.map((name) => startTopology(name)));
  const running = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) {
    await stopStarted(running);
    throw failed.reason;
  }
  return running;
}

/** Stops the topologies of `running` that were started here, not the user's own servers (stopTopology unsets their variables). */
export async function stopStarted(running: readonly RunningTopology[]): Promise<void> {
  for (const topology of running) {
    if (topology.managed) await stopTopology(topology.name);
  }
}
