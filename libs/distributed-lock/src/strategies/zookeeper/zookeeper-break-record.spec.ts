import { brokenNodesOf, encodeBreakRecord } from './zookeeper-break-record';

// recordBreak and wasBroken run against a real ZooKeeper in the query contract (test/contract/query.contract.ts).
describe('ZooKeeper break record', () => {
  it('names the nodes a break ended, and none for an empty or foreign lock node', () => {
    const node = '_c_2f1d-write-0000000007';
    expect(brokenNodesOf(encodeBreakRecord([node, '_c_9a-read-0000000008']))).toEqual([node, '_c_9a-read-0000000008']);
    expect(brokenNodesOf('')).toEqual([]);
    expect(brokenNodesOf('{"broken":"all"}')).toEqual([]);
    expect(brokenNodesOf('{oops')).toEqual([]);
  });
});
