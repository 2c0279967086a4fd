import { behindProxies, LatencyProxy } from '../support/latency-proxy';
import type { ContractSubject } from './contract-subject';

/**
 * `subject` with its servers `rttMs` of round trip away: its `prepare` puts a latency proxy in front of every
 * server address in the variables `envVars` name and points the variables at the proxies (child processes
 * inherit them), and its teardown puts them back. The suites then run unchanged, as if across zones.
 */
export function atDistance(subject: ContractSubject, envVars: readonly string[], rttMs: number): ContractSubject {
  return {
    ...subject,
    name: `${subject.name} at ${rttMs} ms RTT`,
    async prepare() {
      const undoSubject = await subject.prepare?.();
      const saved = envVars.map((name) => [name, process.env[name]] as const);
      const proxies: LatencyProxy[] = [];
      for (const name of envVars) {
        const value = process.env[name];
        if (!value) throw new Error(`${name} is not set: the subject's servers must be up before its proxies`);
        process.env[name] = await behindProxies(value, rttMs / 2, proxies);
      }
      return async () => {
        for (const [name, value] of saved) process.env[name] = value;
        await Promise.all(proxies.map((proxy) => proxy.close()));
        await undoSubject?.();
      };
    },
  };
}
