import { createServer, type Server } from 'node:net';
import { describeServers, envVarOf, startTopologies } from '../../scripts/services';

/**
 * `startTopologies` (the consumer apps' and the demo's server start) on two fault topologies, which only the
 * fault project uses, after this one: when one cannot start, the one that did is stopped, and its variable
 * no longer points at it. Before, a failed start left the other servers running after the script exited.
 */
describe('startTopologies', () => {
  it('stops the servers that came up when another fails to start, and rethrows its error', async () => {
    // memcached-faults' port taken by something else: its start fails with "port … busy".
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(11312, '127.0.0.1', resolve));
    const variable = envVarOf('redis-restart');
    try {
      await expect(startTopologies(['redis-restart', 'memcached-faults'], () => undefined)).rejects.toThrow(/port 11312 busy/);
      expect(describeServers().filter((server) => server.topology === 'redis-restart' && server.running)).toEqual([]);
      expect(process.env[variable]).toBeUndefined();
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
      delete process.env[variable];
    }
  }, 60_000);
});
