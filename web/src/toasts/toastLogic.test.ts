import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TTL_MS,
  dismissToast,
  iconKind,
  isForOperator,
  MAX_TOASTS,
  msUntilNextExpiry,
  normaliseTtl,
  normaliseVariant,
  parseToast,
  pruneExpired,
  pushToast,
  type Toast,
} from './toastLogic';

function toast(id: string, now = 0, ttl = DEFAULT_TTL_MS): Toast {
  return parseToast({ id, message: `message ${id}`, ttl_ms: ttl }, now)!;
}

describe('normaliseVariant', () => {
  it.each([
    ['info', 'info'],
    ['WARNING', 'warning'],
    [' Error ', 'error'],
    ['success', 'info'],
    ['', 'info'],
    [undefined, 'info'],
    [42, 'info'],
  ])('%j -> %s', (input, want) => {
    expect(normaliseVariant(input)).toBe(want);
  });
});

describe('iconKind', () => {
  it.each([
    ['info', 'info'],
    ['filter', 'filter'],
    ['schedule', 'schedule'],
    ['warning', 'warning'],
    ['error', 'error'],
    ['device', 'device'],
    ['Device', 'device'],
    ['rocket_launch', 'bell'],
    ['', 'bell'],
    [null, 'bell'],
    [undefined, 'bell'],
  ])('%j -> %s', (input, want) => {
    expect(iconKind(input)).toBe(want);
  });
});

describe('normaliseTtl', () => {
  it('defaults a missing or nonsensical value to about 5.2 s', () => {
    expect(normaliseTtl(undefined)).toBe(5200);
    expect(normaliseTtl('9000')).toBe(5200);
    expect(normaliseTtl(-1)).toBe(5200);
    expect(normaliseTtl(0)).toBe(5200);
    expect(normaliseTtl(Number.NaN)).toBe(5200);
  });
  it('keeps a positive number', () => {
    expect(normaliseTtl(12000)).toBe(12000);
  });
});

describe('parseToast', () => {
  it('reads the emitted payload', () => {
    const t = parseToast(
      {
        id: 'b3c1',
        title: 'Backup',
        message: 'Backup finished\nin 3 s',
        icon: 'schedule',
        variant: 'WARNING',
        ttl_ms: 8000,
        username: 'alice',
        role: 'admin',
        sender: 'admin',
        created_at: '2026-11-21T08:00:00Z',
      },
      1000,
    );
    expect(t).toEqual({
      id: 'b3c1',
      title: 'Backup',
      message: 'Backup finished\nin 3 s',
      icon: 'schedule',
      variant: 'warning',
      ttlMs: 8000,
      username: 'alice',
      createdAt: '2026-11-21T08:00:00Z',
      receivedAt: 1000,
      expiresAt: 9000,
    });
  });

  it('fills defaults', () => {
    const t = parseToast({ message: 'hello' }, 0)!;
    expect(t.title).toBe('Notification');
    expect(t.variant).toBe('info');
    expect(t.icon).toBe('bell');
    expect(t.ttlMs).toBe(DEFAULT_TTL_MS);
    expect(t.username).toBeNull();
    expect(t.id).toMatch(/^local-/);
  });

  it('accepts the variant aliases type and severity', () => {
    expect(parseToast({ message: 'x', type: 'error' }, 0)!.variant).toBe('error');
    expect(parseToast({ message: 'x', severity: 'Warning' }, 0)!.variant).toBe('warning');
  });

  it('drops payloads without a message', () => {
    expect(parseToast({ title: 'x' }, 0)).toBeNull();
    expect(parseToast({ message: '   ' }, 0)).toBeNull();
    expect(parseToast(null, 0)).toBeNull();
    expect(parseToast('text', 0)).toBeNull();
  });

  it('gives local ids that do not collide', () => {
    expect(parseToast({ message: 'a' }, 5)!.id).not.toBe(parseToast({ message: 'a' }, 5)!.id);
  });
});

describe('isForOperator', () => {
  it('shows broadcast toasts to everyone', () => {
    expect(isForOperator({ username: null }, 'bob')).toBe(true);
  });
  it('shows a scoped toast only to its operator', () => {
    expect(isForOperator({ username: 'alice' }, 'alice')).toBe(true);
    expect(isForOperator({ username: 'Alice' }, 'alice')).toBe(true);
    expect(isForOperator({ username: 'alice' }, 'bob')).toBe(false);
    expect(isForOperator({ username: 'alice' }, null)).toBe(false);
  });
});

describe('stack', () => {
  it('puts the newest on top and keeps at most 5', () => {
    let stack: Toast[] = [];
    for (let i = 1; i <= 7; i++) stack = pushToast(stack, toast(String(i)));
    expect(stack.map((t) => t.id)).toEqual(['7', '6', '5', '4', '3']);
    expect(stack).toHaveLength(MAX_TOASTS);
  });

  it('replaces a repeated id instead of showing it twice', () => {
    let stack = pushToast([], toast('a'));
    stack = pushToast(stack, toast('b'));
    stack = pushToast(stack, toast('a', 10));
    expect(stack.map((t) => t.id)).toEqual(['a', 'b']);
    expect(stack[0].receivedAt).toBe(10);
  });

  it('does not mutate its input', () => {
    const stack = [toast('a')];
    pushToast(stack, toast('b'));
    dismissToast(stack, 'a');
    expect(stack.map((t) => t.id)).toEqual(['a']);
  });

  it('dismisses by id', () => {
    const stack = [toast('a'), toast('b')];
    expect(dismissToast(stack, 'a').map((t) => t.id)).toEqual(['b']);
    expect(dismissToast(stack, 'zzz')).toHaveLength(2);
  });

  it('expires toasts at their own ttl', () => {
    const stack = [toast('short', 0, 1000), toast('default', 0), toast('long', 0, 60_000)];
    expect(pruneExpired(stack, 999).map((t) => t.id)).toEqual(['short', 'default', 'long']);
    expect(pruneExpired(stack, 1000).map((t) => t.id)).toEqual(['default', 'long']);
    expect(pruneExpired(stack, 5200).map((t) => t.id)).toEqual(['long']);
    expect(pruneExpired(stack, 60_000)).toEqual([]);
  });

  it('returns the same array when nothing expired, so React does not re-render', () => {
    const stack = [toast('a', 0)];
    expect(pruneExpired(stack, 1)).toBe(stack);
  });

  it('computes the wait until the next expiry', () => {
    expect(msUntilNextExpiry([], 0)).toBeNull();
    const stack = [toast('a', 0, 9000), toast('b', 0, 2000)];
    expect(msUntilNextExpiry(stack, 500)).toBe(1500);
    expect(msUntilNextExpiry(stack, 5000)).toBe(0);
  });
});
