import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAppProcess, stopAppProcess, type AppProcess } from '../support/app-process';
import { FencedResource } from '../support/fenced-resource';
import { monotonicNow } from '../support/history/hold-history';
import { stopProcess } from '../support/stop-process';
import { checkLeadership, unexplainedRefusals, type DeathRecord, type FreezeRecord, type LeaderWriteRecord, type TermRecord } from '../support/leader/check-leadership';
import { APP_STRATEGIES } from '../support/app-strategies';
import { fencedResourceOf, LEADER_TTL_MS } from '../support/leader/leader-app.config';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const WORKER = join(__dirname, '..', 'support', 'leader', 'leader-app.worker.ts');
const STRATEGIES = Object.keys(APP_STRATEGIES);
/** Past every lease: the 3 s election lease and ZooKeeper's 4 s session. */
const FREEZE_MS = 6_500;
/** A frozen leader is told this soon after it wakes, at the latest. */
const TOLD_AFTER_WAKE_MS = 2_000;
/** From the leader's SIGKILL to a new leader, at most: its lease (ZooKeeper: session), the pause of a polling waiter, a loaded machine. */
const FAILOVER_WITHIN: Record<string, number> = {
  redis: LEADER_TTL_MS + 2_000,
  redlock: LEADER_TTL_MS + 2_000,
  row: LEADER_TTL_MS + 2_000,
  sqlite: LEADER_TTL_MS + 2_000,
  pessimistic: 2_000,
  zookeeper: 4_000 + 2_000,
  etcd: LEADER_TTL_MS + 1_000 + 2_000,
  'row-postgres': LEADER_TTL_MS + 2_000,
  'pessimistic-postgres': 2_000,
  'advisory-postgres': 2_000,
  'advisory-mysql': 2_000,
  // The lease in whole seconds, plus the second memcached may keep an expired item.
  memcached: Math.ceil(LEADER_TTL_MS / 1_000) * 1_000 + 1_000 + 2_000,
};
/** Strategies without fencing tokens: their leaders have no term, so a frozen one makes no stale write; it is told it lost. */
const WITHOUT_TERMS = new Set(['redlock', 'memcached']);

/** Every term the processes reported, from their "gained" and "lost" lines. */
function termsOf(apps: readonly AppProcess[]): TermRecord[] {
  const terms: TermRecord[] = [];
  for (const app of apps) {
    const open = new Map<string, { term: number | undefined; from: string }>();
    for (const line of app.lines) {
      const gained = /^gained (\S+) (\S+) (\d+)$/.exec(line);
      if (gained) open.set(gained[1], { term: gained[2] === '-' ? undefined : Number(gained[2]), from: gained[3] });
      const lost = /^lost (\S+) \S+ \S+ (\d+)$/.exec(line);
      const current = lost ? open.get(lost[1]) : undefined;
      if (lost && current) {
        terms.push({ election: lost[1], process: app.name, ...current, until: lost[2] });
        open.delete(lost[1]);
      }
    }
    for (const [election, current] of open) terms.push({ election, process: app.name, ...current });
  }
  return terms;
}

/** The fenced write each new leader made, from the "write" lines. */
function writesOf(apps: readonly AppProcess[]): LeaderWriteRecord[] {
  return apps.flatMap((app) =>
    app.lines.flatMap((line) => {
      const write = /^write (\S+) (\d+) (accepted|rejected) (\d+) (\d+)$/.exec(line);
      return write ? [{ election: write[1], process: app.name, term: Number(write[2]), accepted: write[3] === 'accepted', sentAt: write[4], answeredAt: write[5] }] : [];
    }),
  );
}

/** Which process leads each election now (the last "gained" without a "lost" after it). */
function leaders(apps: readonly AppProcess[]): Map<string, AppProcess> {
  const now = new Map<string, AppProcess>();
  for (const term of termsOf(apps)) {
    const app = apps.find((candidate) => candidate.name === term.process);
    if (term.until === undefined && app && app.child.exitCode === null && app.child.signalCode === null) now.set(term.election, app);
  }
  return now;
}

/**
 * What happened in one election, in order, for a failure message: each term (process, term, when it was
 * gained and lost), each fenced write of a new leader (when it was sent and answered), and the freezes
 * and deaths; times in ms since `origin`.
 */
function electionStory(apps: readonly AppProcess[], election: string, events: { freezes: readonly FreezeRecord[]; deaths: readonly DeathRecord[] }, origin: string): string {
  const at = (ns: string): string => `+${Number((BigInt(ns) - BigInt(origin)) / 1_000_000n)} ms`;
  const entries: { ns: string; text: string }[] = [];
  for (const term of termsOf(apps).filter((t) => t.election === election)) {
    entries.push({ ns: term.from, text: `${term.process} gained term ${term.term ?? '-'}` });
    if (term.until !== undefined) entries.push({ ns: term.until, text: `${term.process} lost term ${term.term ?? '-'}` });
  }
  for (const write of writesOf(apps).filter((w) => w.election === election)) {
    entries.push({ ns: write.sentAt, text: `${write.process} write term ${write.term} sent, ${write.accepted ? 'accepted' : 'rejected'} at ${at(write.answeredAt)}` });
  }
  for (const app of apps) {
    for (const line of app.lines) {
      const stale = /^stale-write (\S+) (\S+) (accepted|rejected) aborted=\S+ (\d+) (\d+)$/.exec(line);
      if (stale && stale[1] === election) entries.push({ ns: stale[4], text: `${app.name} stale write term ${stale[2]} sent, ${stale[3]} at ${at(stale[5])}` });
    }
  }
  for (const freeze of events.freezes) entries.push({ ns: freeze.stoppedAt, text: `${freeze.process} frozen until ${at(freeze.resumedAt)}` });
  for (const death of events.deaths) entries.push({ ns: death.at, text: `${death.process} killed` });
  entries.sort((a, b) => (BigInt(a.ns) < BigInt(b.ns) ? -1 : BigInt(a.ns) > BigInt(b.ns) ? 1 : 0));
  return entries.map((entry) => `  ${at(entry.ns)} ${entry.text}`).join('\n');
}

/** Waits for `condition`; `what` (or what it returns, read at the timeout) names what did not happen. */
async function until(condition: () => boolean, timeoutMs: number, what: string | (() => string)): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${typeof what === 'string' ? what : what()}`);
    await sleep(20);
  }
}

/**
 * Three app processes campaign in one election per strategy. The first leads every election; it is
 * killed (the failover time of each backend is measured, and written to LOCK_FAILOVER_REPORT when set);
 * then each remaining leader is frozen with SIGSTOP past its lease, resumed, and made to write with its
 * old term at once, before it can have looked at anything.
 */
describe('Leader election across three app processes, every strategy at once', () => {
  it('never has two leaders but a frozen one inside the bound, where its fenced write is refused; fails over after SIGKILL', async () => {
    process.env.LOCK_TEST_SQLITE_PATH ??= join(tmpdir(), `leader-${run}.sqlite`);
    const resource = new FencedResource();
    for (const strategy of STRATEGIES) await resource.reset(fencedResourceOf(run, strategy));
    const env = (name: string): NodeJS.ProcessEnv => ({ INSTANCE: name, LEADER_RUN: run });
    const apps: AppProcess[] = [];
    const freezes: FreezeRecord[] = [];
    const deaths: DeathRecord[] = [];
    const origin = monotonicNow();
    try {
      const first = startAppProcess('p1', WORKER, env('p1'));
      apps.push(first);
      await until(() => STRATEGIES.every((s) => leaders(apps).get(s) === first), 60_000, 'p1 leads every election');
      apps.push(startAppProcess('p2', WORKER, env('p2')), startAppProcess('p3', WORKER, env('p3')));
      await Promise.all(apps.slice(1).map((app) => app.waitForLine(/^ready$/, 60_000)));
      await sleep(1_000);

      // 1. SIGKILL the leader of every election.
      first.child.kill('SIGKILL');
      const killedAt = monotonicNow();
      deaths.push({ process: 'p1', at: killedAt });
      await first.exited;
      await until(() => STRATEGIES.every((s) => leaders(apps).has(s)), 15_000, 'a new leader for every election');
      const failover: Record<string, number> = {};
      for (const term of termsOf(apps)) {
        if (term.process !== 'p1' && BigInt(term.from) > BigInt(killedAt) && failover[term.election] === undefined) {
          failover[term.election] = Number((BigInt(term.from) - BigInt(killedAt)) / 1_000_000n);
        }
      }
      for (const strategy of STRATEGIES) expect(failover[strategy], `${strategy} failover ${failover[strategy]} ms`).toBeLessThanOrEqual(FAILOVER_WITHIN[strategy]);
      if (process.env.LOCK_FAILOVER_REPORT) appendFileSync(process.env.LOCK_FAILOVER_REPORT, `${JSON.stringify({ ttlMs: LEADER_TTL_MS, zookeeperSessionMs: 4_000, failoverMs: failover })}\n`);

      // 2. Freeze each process that leads something past its leases, wake it, and have it write at once.
      const frozenLeaders = new Set<string>();
      for (const round of [0, 1]) {
        const current = leaders(apps);
        const target = [...new Set(current.values())].sort((x, y) => [...current.values()].filter((a) => a === y).length - [...current.values()].filter((a) => a === x).length)[0];
        const led = STRATEGIES.filter((s) => current.get(s) === target);
        for (const s of led) frozenLeaders.add(s);
        const mark = target.lines.length;
        const stoppedAt = await stopProcess(target.child.pid as number);
        await sleep(FREEZE_MS);
        // The careless write waits in its stdin, and goes in with the wake-up, before its timers can run.
        target.send('write');
        target.child.kill('SIGCONT');
        const resumedAt = monotonicNow();
        freezes.push({ process: target.name, stoppedAt, resumedAt });
        const wroteStale = (s: string): boolean => target.lines.slice(mark).some((line) => line.startsWith(`stale-write ${s} `) || (WITHOUT_TERMS.has(s) && line.startsWith(`lost ${s} `)));
        await until(
          () => led.every(wroteStale),
          10_000,
          () => `round ${round}: stale writes of ${target.name} for ${led.filter((s) => !wroteStale(s)).join(', ')}; its lines since the freeze: ${target.lines.slice(mark).join(' | ')}; stderr: ${target.stderrTail()}`,
        );
        await until(() => STRATEGIES.every((s) => leaders(apps).has(s)), 15_000, `round ${round}: a leader for every election`);
        for (const line of target.lines.slice(mark).filter((l) => l.startsWith('stale-write '))) {
          const [, strategy, term, , , sentAt] = line.split(' ');
          // Refused wherever a newer leader began meanwhile, and where the leader's own write of the same
          // term, made as it gained it, landed before (the fencing check refuses a term equal to the one
          // written). Otherwise that own write was still on its way (the freeze came first): either may land first.
          const replaced = termsOf(apps).some((t) => t.election === strategy && t.process !== target.name && BigInt(t.from) > BigInt(stoppedAt));
          const own = writesOf([target]).find((w) => w.election === strategy && String(w.term) === term);
          const ownLandedBefore = own !== undefined && own.accepted && BigInt(own.answeredAt) < BigInt(sentAt);
          const expected = replaced || ownLandedBefore ? / rejected / : / (accepted|rejected) /;
          expect(line, `${target.name} ${line}\n${strategy}:\n${electionStory(apps, strategy, { freezes, deaths }, origin)}`).toMatch(expected);
        }
        await sleep(1_500);
      }
      expect(frozenLeaders).toEqual(new Set(STRATEGIES));
      const storiesOf = (elections: readonly string[]): string => [...new Set(elections)].map((election) => `${election}:\n${electionStory(apps, election, { freezes, deaths }, origin)}`).join('\n');
      const anomalies = checkLeadership(termsOf(apps), { freezes, deaths }, TOLD_AFTER_WAKE_MS);
      expect(anomalies, storiesOf(anomalies.map((anomaly) => anomaly.election))).toEqual([]);
      // A new leader's own write is refused only where a higher term began elsewhere before it landed (its
      // process was frozen, or lost the term, between gaining it and writing): never for a term handed out twice.
      const refused = unexplainedRefusals(termsOf(apps), writesOf(apps));
      expect(refused, `a new leader's fenced write refused with no newer term before it\n${storiesOf(refused.map((write) => write.election))}`).toEqual([]);
    } finally {
      await Promise.all(apps.map((app) => stopAppProcess(app)));
      await resource.close();
    }
  }, 180_000);
});
