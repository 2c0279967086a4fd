import { pageOfSortedKeys } from './key-pages';

describe('pageOfSortedKeys', () => {
  it('pages through the keys in order, each page starting after the last key of the one before', () => {
    const keys = ['c', 'a', 'e', 'b', 'd'];
    const first = pageOfSortedKeys(keys, { limit: 2 });
    expect(first).toEqual({ keys: ['a', 'b'], next: 'b' });
    const second = pageOfSortedKeys(keys, { limit: 2, cursor: first.next });
    expect(second).toEqual({ keys: ['c', 'd'], next: 'd' });
    expect(pageOfSortedKeys(keys, { limit: 2, cursor: second.next })).toEqual({ keys: ['e'] });
  });
});
