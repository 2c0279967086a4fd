import { stopAll } from '../../scripts/services';

/** Jest global teardown: stops every server this machine's runs started (none of the user's own). */
export default async function globalTeardown(): Promise<void> {
  await stopAll();
}
