// What the call-chain frame of a re-entrant section costs the application's own code: the first
// AsyncLocalStorage.run of a process turns on an async hook on Node 20 and 22, which every promise of the
// process pays for afterwards, under a lock or not. Each case runs in a fresh process: a plain loop of awaits
// is timed before and after one `withLock` (in-memory strategy) that does or does not make a frame.
// Usage: node -r @swc-node/register bench/probes/call-chain-cost.ts [node binaries…] (default: this node)
// Writes bench/results/call-chain-cost.json and .md.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockManager, LockService } from '../../libs/distributed-lock/src';
import { InMemoryLockStrategy } from '../../libs/distributed-lock/src/strategies/in-memory';

const AWAITS = 2_000_000;
/** Fresh processes per row. */
const PROCESSES = 5;
const CASES = ['no lock taken', 'withLock, reentrant: false', 'withLock (default: re-entrant)'] as const;
type Case = (typeof CASES)[number];

async function awaitLoop(n: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < n; i += 1) await null;
  return performance.now() - started;
}

/** In a child: the loop's time after the case, best of 3 (ms). */
async function child(which: Case): Promise<void> {
  await awaitLoop(AWAITS); // warm the loop: JIT, not the hook
  const manager = new LockManager(new InMemoryLockStrategy());
  const locks = new LockService(manager);
  if (which !== 'no lock taken') await locks.withLock('k', () => undefined, which === 'withLock, reentrant: false' ? { reentrant: false } : {});
  await manager.close();
  const times = [await awaitLoop(AWAITS), await awaitLoop(AWAITS), await awaitLoop(AWAITS)];
  process.stdout.write(`${JSON.stringify({ ms: Math.min(...times) })}\n`);
}

function parent(): void {
  const nodes = process.argv.slice(2).length > 0 ? process.argv.slice(2) : [process.execPath];
  const rows: Array<{ node: string; case: Case; ms: number; ratio: number }> = [];
  for (const node of nodes) {
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    // The fastest of several fresh processes: a shared machine slows some of them, never speeds one up.
    const once = (which: Case): number =>
      (JSON.parse(execFileSync(node, ['-r', '@swc-node/register', __filename], { env: { ...process.env, CALL_CHAIN_CASE: which }, encoding: 'utf8' })) as { ms: number }).ms;
    const ms = (which: Case): number => Math.min(...Array.from({ length: PROCESSES }, () => once(which)));
    const base = ms('no lock taken');
    for (const which of CASES) {
      const time = which === 'no lock taken' ? base : ms(which);
      rows.push({ node: version, case: which, ms: Math.round(time), ratio: Math.round((time / base) * 100) / 100 });
    }
  }
  const out = join(__dirname, '..', 'results', 'call-chain-cost');
  writeFileSync(`${out}.json`, `${JSON.stringify({ date: new Date().toISOString(), awaits: AWAITS, rows }, null, 2)}\n`);
  const table = ['| node | after | 2 M awaits (ms) | vs no lock |', '|---|---|---|---|', ...rows.map((r) => `| ${r.node} | ${r.case} | ${r.ms} | ${r.ratio}× |`)];
  writeFileSync(`${out}.md`, `# The call-chain frame's cost to the application's own promises\n\n- date: ${new Date().toISOString()}\n- a loop of ${AWAITS.toLocaleString('en')} \`await null\` after the section named, best of 3 in a process, fastest of ${PROCESSES} fresh processes\n\n${table.join('\n')}\n`);
  console.log(table.join('\n'));
}

if (process.env.CALL_CHAIN_CASE) void child(process.env.CALL_CHAIN_CASE as Case);
else parent();
