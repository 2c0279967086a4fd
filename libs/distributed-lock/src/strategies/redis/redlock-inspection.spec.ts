import { newAcquisitionId, ownerOfAcquisition } from './redlock-acquisition-id';
import { masterViewOf, redlockReadingOf, type RedlockMasterView } from './redlock-inspection';

const OWNER = 'host-1:4242:0b7d2f9e-3c1a-4f6b-9d8e-2a1b3c4d5e6f';
const holder = newAcquisitionId(OWNER);
const other = newAcquisitionId('host-2:7:1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f');

/** A plain master's view naming `id`, its record ending at `expiresAt`. */
const plain = (id: string, expiresAt?: number): RedlockMasterView => ({ id, keepsLine: false, ...(expiresAt === undefined ? {} : { expiresAt }), waiters: [] });

/** The view of the master that keeps the line (the first), naming `id`, with nobody in line. */
const line = (id: string, expiresAt?: number): RedlockMasterView => ({ ...plain(id, expiresAt), keepsLine: true });

describe('Redlock acquisition ids', () => {
  it('carry the owner id, and a fresh random part each time', () => {
    expect(ownerOfAcquisition(holder)).toBe(OWNER);
    expect(newAcquisitionId(OWNER)).not.toBe(holder);
  });

  it('give an id of another form (a bare uuid of an earlier version) as it is', () => {
    const bare = '0b7d2f9e-3c1a-4f6b-9d8e-2a1b3c4d5e6f';
    expect(ownerOfAcquisition(bare)).toBe(bare);
    expect(ownerOfAcquisition(`/${bare}`)).toBe(`/${bare}`);
  });
});

describe('Redlock inspection', () => {
  it("moves a master's lease end onto this clock by the middle of the round trip, and lists its line", () => {
    const view = masterViewOf(['h', holder, 2_000, [other, 'x', holder, 's']], 10_000);
    expect(view).toEqual({ id: holder, keepsLine: true, expiresAt: 12_000, waiters: [{ id: other, mode: 'exclusive' }, { id: holder, mode: 'shared' }] });
    expect(masterViewOf(['', '', -2, []], 10_000)).toEqual({ id: '', keepsLine: false, waiters: [] });
    expect(masterViewOf(['s', holder, -1, []], 10_000).expiresAt).toBeUndefined();
  });

  it('names a holder only where a majority names it, its lease ending where fewer than a majority still have it', () => {
    const views = [line(holder, 5_000), plain(holder, 9_000), plain(holder, 7_000), plain(holder, 6_000), plain(holder, 8_000)];
    expect(redlockReadingOf(views, 3)).toEqual({
      holderId: holder,
      // The third latest of five ends: past 7 000 only two masters keep it.
      inspection: { holders: [{ owner: OWNER, mode: 'exclusive', expiresAt: 7_000 }], waiters: [] },
    });
    // Four of five, one master down: the third latest of the four.
    expect(redlockReadingOf([undefined, plain(holder, 5_000), plain(holder, 9_000), plain(holder, 7_000), plain(holder, 6_000)], 3)?.inspection).toEqual({
      holders: [{ owner: OWNER, mode: 'exclusive', expiresAt: 6_000 }],
      waiters: undefined,
    });
    // The first master keeps the key as a plain one: an instance listing the masters in another order holds
    // it and keeps its line on another master. The holder is named; the line is not known.
    expect(redlockReadingOf(views, 3)?.inspection.waiters).toEqual([]);
    expect(redlockReadingOf([plain(holder, 5_000), ...views.slice(1)], 3)?.inspection).toEqual({ holders: [{ owner: OWNER, mode: 'exclusive', expiresAt: 7_000 }], waiters: undefined });
    // The first master has no record of the key while a majority names a holder: the holder's grant never
    // reached it (a round that got its majority elsewhere), so its line is kept elsewhere too, or nowhere
    // this instance reads. Unknown, not "nobody waits" (seen: a query from an instance listing the masters in
    // reverse order, redlock-master-order.int.spec.ts, while a waiter of the holder's order was queued).
    expect(redlockReadingOf([plain(''), ...views.slice(1)], 3)?.inspection).toEqual({ holders: [{ owner: OWNER, mode: 'exclusive', expiresAt: 7_000 }], waiters: undefined });
    // Nobody named and nothing on the first master: nobody holds it, and nobody waits in the line it keeps.
    expect(redlockReadingOf([plain(''), plain(''), plain(''), plain(''), plain('')], 3)?.inspection.waiters).toEqual([]);
    // Two votes each (a split): nobody holds it.
    expect(redlockReadingOf([plain(holder), plain(holder), plain(other), plain(other), plain('')], 3)?.inspection.holders).toEqual([]);
  });

  it('gives no lease end unless a majority of the holder’s masters tell theirs', () => {
    const [held] = redlockReadingOf([plain(holder, 5_000), plain(holder), plain(holder, 7_000), plain(''), plain('')], 3)?.inspection.holders ?? [];
    expect(held).toEqual({ owner: OWNER, mode: 'exclusive' });
  });

  it('cannot tell when the masters that did not answer could make a majority for somebody', () => {
    expect(redlockReadingOf([plain(holder), plain(holder), undefined, plain(''), plain('')], 3)).toBeUndefined();
    // Not so once the answers rule it out.
    expect(redlockReadingOf([plain(holder), undefined, plain(''), plain(''), plain('')], 3)?.inspection.holders).toEqual([]);
  });

  it("lists the first master's line, headed by the contender its vote was handed to while the others still hold the last holder's keys", () => {
    const next = newAcquisitionId('host-3:9:2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a');
    const first: RedlockMasterView = { id: next, keepsLine: true, waiters: [{ id: other, mode: 'exclusive' }] };
    const reading = redlockReadingOf([first, plain(holder, 1), plain(holder, 2), plain(holder, 3), plain(holder, 4)], 3);
    expect(reading?.inspection.waiters).toEqual([
      { owner: ownerOfAcquisition(next), mode: 'exclusive' },
      { owner: ownerOfAcquisition(other), mode: 'exclusive' },
    ]);
    // The first master's vote is the holder's own: its line alone.
    const held = redlockReadingOf([{ ...first, id: holder }, plain(holder), plain(holder), plain(''), plain('')], 3);
    expect(held?.inspection.waiters).toEqual([{ owner: ownerOfAcquisition(other), mode: 'exclusive' }]);
    // Granted by the others while the first master's answer was late: its place in line is no wait.
    const lateFirst = redlockReadingOf([{ id: '', keepsLine: true, waiters: [{ id: holder, mode: 'exclusive' }] }, plain(holder), plain(holder), plain(holder), plain('')], 3);
    expect(lateFirst?.inspection.waiters).toEqual([]);
  });

  it("names nobody as next while no majority names a holder: the first master's vote-holder may be the holder whose release has not reached it yet", () => {
    const first: RedlockMasterView = { id: holder, keepsLine: true, waiters: [{ id: other, mode: 'exclusive' }] };
    // Released on three of the others (one still has it: with the first master's, two of five), not yet on the first.
    const reading = redlockReadingOf([first, plain(''), plain(''), plain(''), plain(holder)], 3);
    expect(reading?.inspection).toEqual({ holders: [], waiters: [{ owner: ownerOfAcquisition(other), mode: 'exclusive' }] });
  });
});
