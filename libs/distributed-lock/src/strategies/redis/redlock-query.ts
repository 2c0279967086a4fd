import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { LockInspection } from '../../locking/lock-query';
import type { RedisLockClient } from './redis-client.type';
import type { OwnedRedisClient } from './redis-connection';
import { QUERY_WAITERS_LIMIT } from './redis-lock-inspection';
import { connectionsBeingMade, connectionsMade } from './redlock-connections-made';
import type { RedisLockKeyNames, RedisLockKeys } from './redis-keys';
import { RedisScript } from './redis-script';
import { masterViewOf, redlockReadingOf, type RedlockMasterView, type RedlockReading } from './redlock-inspection';
import { majorityError, type RedlockCallSite } from './redlock-majority-error';
import type { RedlockQueueMaster } from './redlock-queue-master';
import { runOnMasters, type NodeOutcome } from './redlock-round';
import { REDLOCK_INSPECT_SCRIPT } from './redlock.scripts';

/** What the query needs of the Redlock strategy. */
export interface RedlockQueryDeps {
  readonly name: string;
  readonly nodes: readonly OwnedRedisClient[];
  readonly nodeTimeoutMs: number;
  readonly quorum: number;
  readonly keyNames: RedisLockKeyNames;
  readonly queueMaster: RedlockQueueMaster;
  /** Deletes `owner`'s plain key on one master (owner-checked) and announces the release. True when it was `owner`'s. */
  releasePlain(client: RedisLockClient, keys: RedisLockKeys, owner: string): Promise<boolean>;
}

/** The masters' reading of a key, with each master's view (undefined: it did not answer in time). */
interface Reading extends RedlockReading {
  readonly views: ReadonlyArray<RedlockMasterView | undefined>;
}

/**
 * `LockService.query` and `breakLock` for Redlock: every master read in parallel, in a round bounded by the
 * node timeout as every round is; the holder is the one a majority names. A minority of masters down does
 * not fail them; too few answers to decide, after a few rounds, does, with the strategy's typed errors.
 */
export class RedlockQuery {
  private readonly inspectScript = new RedisScript(REDLOCK_INSPECT_SCRIPT);

  constructor(private readonly deps: RedlockQueryDeps) {}

  /** See `redlockReadingOf` for what each field says and how precisely. */
  async inspect(key: string): Promise<LockInspection> {
    return (await this.read(key)).inspection;
  }

  /**
   * Deletes the holder's record on every master, owner-checked (a holder that came after the reading is
   * not broken; on the first master, its vote goes to the head of its line as a release gives it). The hold
   * ended once fewer than a majority can still have it: the masters that did not answer, among those that
   * had it. Those are asked again, up to MAX_ROUNDS in all (an owner-checked delete is harmless to repeat).
   * The holder learns at its next extension or release.
   */
  async breakLock(key: string): Promise<LockInspection['holders']> {
    const { holderId, inspection, views } = await this.read(key);
    if (holderId === undefined) return [];
    const { nodes, nodeTimeoutMs, quorum, queueMaster } = this.deps;
    const keys = this.deps.keyNames.of(key);
    const started = Date.now();
    let mayHold = views.map((view) => view === undefined || view.id === holderId);
    for (let round = 1; ; round += 1) {
      // Sent also where the connection is down (its client sends it once reconnected): owner-checked, so late is harmless.
      const outcomes = await runOnMasters(
        nodes,
        nodeTimeoutMs,
        (client, i) => {
          if (!mayHold[i]) return Promise.resolve(false);
          const keepsLine = views[i]?.keepsLine ?? i === FIRST;
          return keepsLine ? queueMaster.breakHold(client, keys, holderId) : this.deps.releasePlain(client, keys, holderId);
        },
        Infinity,
        true,
      );
      mayHold = mayHold.map((may, i) => may && !outcomes[i].answered);
      if (mayHold.filter(Boolean).length < quorum) return inspection.holders;
      if (round === MAX_ROUNDS) throw majorityError(this.siteOf('breakLock', key), outcomes, quorum, Date.now() - started);
    }
  }

  /**
   * Reads every master, in rounds bounded by the node timeout. A read is harmless to repeat: a round that
   * too few masters answered in time to decide (a fresh strategy still making its connections, a host too
   * busy to read the answers within the node timeout, a key changing hands during the round) is made again,
   * up to MAX_ROUNDS in all, before the call fails.
   */
  private async read(key: string): Promise<Reading> {
    const { nodes, quorum } = this.deps;
    const started = Date.now();
    for (let round = 1; ; round += 1) {
      const { views, outcomes, answered } = await this.readRound(key);
      const reading = answered >= quorum ? redlockReadingOf(views, quorum) : undefined;
      if (reading) return { ...reading, views };
      if (round === MAX_ROUNDS) {
        if (answered < quorum) throw majorityError(this.siteOf('query', key), outcomes, quorum, Date.now() - started);
        throw new LockBackendUnavailableError(this.deps.name, 'query (too few masters answered to tell whether the key is held)', Date.now() - started, {
          key,
          cause: outcomes.find((o) => o.error !== undefined)?.error,
        });
      }
      // Connections being made are not silent masters: asked again once enough of them are made.
      if (connectionsBeingMade(nodes)) await connectionsMade(nodes, Math.max(1, quorum - answered));
    }
  }

  /**
   * One round reading every master: each master's view, undefined where it did not answer in time. The
   * first master is read once the others have answered. Read beside them, its view could be older than
   * theirs: a holder whose release (or successor) they already show would still hold its vote there, which
   * reads as the head of its line, the next to be served, and the query would list a holder as waiting. Read
   * after them, its vote-holder is not older than their holder: a successor asks the others only once the
   * first master handed it its vote, and a release is sent to the first master first. A round trip more.
   */
  private async readRound(key: string): Promise<{ views: Array<RedlockMasterView | undefined>; outcomes: NodeOutcome[]; answered: number }> {
    const { keys } = this.deps.keyNames.of(key);
    const { nodes, nodeTimeoutMs } = this.deps;
    const views = new Array<RedlockMasterView | undefined>(nodes.length);
    const read = async (client: RedisLockClient, index: number): Promise<boolean> => {
      const sentAt = Date.now();
      const reply = await this.inspectScript.run(client, keys.slice(0, 3), [index === FIRST ? QUERY_WAITERS_LIMIT : 0]);
      views[index] = masterViewOf(reply, Math.round((sentAt + Date.now()) / 2));
      return true;
    };
    // The first master (FIRST) is the first of the list.
    const others = await runOnMasters(nodes.slice(FIRST + 1), nodeTimeoutMs, (client, i) => read(client, FIRST + 1 + i));
    const [first] = await runOnMasters([nodes[FIRST]], nodeTimeoutMs, (client) => read(client, FIRST));
    const outcomes = [first, ...others];
    // A late answer (after the round's bound) may have filled in its view meanwhile: only the round's count.
    const answeredViews = views.map((view, i) => (outcomes[i].answered ? view : undefined));
    return { views: answeredViews, outcomes, answered: outcomes.filter((o) => o.answered).length };
  }

  private siteOf(operation: string, key: string): RedlockCallSite {
    return { strategy: this.deps.name, namespace: this.deps.keyNames.namespace, operation, key };
  }
}

/** The master that keeps the line (see RedlockQueueMaster). */
const FIRST = 0;

/** The most rounds a read, or a break, makes before it fails (see `RedlockQuery`). */
const MAX_ROUNDS = 3;
