import { InMemoryLockStrategy, type LockStrategy } from '@app/distributed-lock';
import type { ContractSubject } from './contract-subject';

/**
 * Every strategy the contract suite runs against. Backends whose servers the test setup starts add
 * their line here; the cross-process worker looks subjects up by name.
 */
// In-process locks are shared through one strategy object: that object is "the server" both clients talk to.
let memoryServer: InMemoryLockStrategy | undefined;

export const subjects: readonly ContractSubject[] = [
  {
    name: 'memory',
    capabilities: new InMemoryLockStrategy().capabilities,
    create: async () => (memoryServer ??= new InMemoryLockStrategy()),
    removeBehindBack: async (strategy: LockStrategy, key: string) => (strategy as InMemoryLockStrategy).forceRelease(key),
  },
];

export function subjectNamed(name: string): ContractSubject {
  const subject = subjects.find((candidate) => candidate.name === name);
  if (!subject) throw new Error(`No contract subject named "${name}"`);
  return subject;
}
