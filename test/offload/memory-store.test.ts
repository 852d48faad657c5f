import { describe, expect, it } from 'vitest';
import { InMemoryToolResultStore } from '../../src/offload/memory-store.js';

describe('InMemoryToolResultStore bound', () => {
  it('drops the oldest entries first once maxTotalChars is exceeded', () => {
    const store = new InMemoryToolResultStore({ maxTotalChars: 10 });
    store.put('a', '1234');
    store.put('b', '5678');
    store.put('c', '90');
    expect(store.size).toBe(3);
    store.put('d', 'xyz');
    expect(store.get('a')).toBeUndefined();
    expect(store.get('b')?.content).toBe('5678');
    expect(store.get('d')?.content).toBe('xyz');
  });

  it('keeps the newest entry even when it alone is over the bound', () => {
    const store = new InMemoryToolResultStore({ maxTotalChars: 5 });
    store.put('a', '12');
    store.put('big', '0123456789');
    expect(store.get('a')).toBeUndefined();
    expect(store.get('big')?.totalChars).toBe(10);
  });

  it('frees the bound when entries are deleted, and declares retention none', () => {
    const store = new InMemoryToolResultStore({ maxTotalChars: 10 });
    store.put('a', '12345', { sessionId: 's' });
    store.deleteBySession('s');
    store.put('b', '1234567890');
    store.put('c', '');
    expect(store.get('b')?.content).toBe('1234567890');
    expect(store.retention).toBe('none');
    expect(() => new InMemoryToolResultStore({ maxTotalChars: 0 })).toThrow(
      expect.objectContaining({ code: 'options.invalid', option: 'maxTotalChars' }),
    );
  });
});
