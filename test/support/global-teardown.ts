import { stopAll, type TopologyName } from '../../scripts/services';

/**
 * Jest global teardown: stops every server this machine's runs started, except the ones the user brought
 * up and pointed the run at through their variables (recorded by the global setup). Does nothing when the
 * setup started nothing (a unit-only run), so that it never stops servers another run is using.
 */
export default async function globalTeardown(): Promise<void> {
  const keepList = process.env.LOCK_TEST_KEEP_TOPOLOGIES;
  if (keepList === undefined) return;
  await stopAll(keepList.split(',').filter(Boolean) as TopologyName[]);
}
