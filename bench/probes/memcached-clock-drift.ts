// How fast memcached's once-a-second clock tick drifts across the second, and so how often a tick passes a
// second boundary late and moves the clock by two seconds at once (why leases are sent as ⌈ttl⌉ + 2 s:
// docs/strategies/memcached.md). Starts a memcached of its own (Debian's package) on a free port.
// Usage: npx tsx bench/probes/memcached-clock-drift.ts [seconds, default 120]
import { spawn } from 'node:child_process';
import { MemcachedClock } from '../../test/support/memcached-clock';
import { freePort } from '../../test/support/free-port';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 120);
  const port = await freePort();
  const child = spawn('memcached', ['-u', process.env.USER ?? 'root', '-l', '127.0.0.1', '-p', String(port), '-U', '0'], { stdio: 'ignore' });
  try {
    await sleep(300);
    const clock = new MemcachedClock('127.0.0.1', port);
    const first = await clock.nextTick();
    let last = first;
    let ticks = 0;
    let twoSecondTicks = 0;
    // Polled only near each tick, so that the polling itself loads the server little.
    while (last.at - first.at < seconds) {
      await sleep(900);
      last = await clock.nextTick();
      ticks += 1;
      if (last.moved === 2) twoSecondTicks += 1;
    }
    clock.close();
    const lateBy = (last.at - first.at - ticks) / ticks;
    console.log(`memcached clock: ${ticks} ticks, each 1 s + ${(lateBy * 1_000).toFixed(2)} ms on average; phase in the second ${(first.at % 1).toFixed(3)} -> ${(last.at % 1).toFixed(3)}`);
    console.log(`a tick passes a second boundary late (the clock moves 2 s) about every ${(1 / lateBy / 60).toFixed(0)} min; seen in this run: ${twoSecondTicks}`);
  } finally {
    child.kill('SIGKILL');
  }
}

void main().then(() => process.exit(0));
