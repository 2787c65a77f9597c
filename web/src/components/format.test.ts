import { describe, expect, it } from 'vitest';
import { formatBytes, formatDuration, formatRelative } from './format';

describe('formatRelative', () => {
  const now = Date.parse('2026-11-21T10:00:00Z');
  it('says how long ago, or how long until', () => {
    expect(formatRelative('2026-11-21T09:59:58Z', now)).toBe('just now');
    expect(formatRelative('2026-11-21T09:59:20Z', now)).toBe('40 s ago');
    expect(formatRelative('2026-11-21T09:55:00Z', now)).toBe('5 min ago');
    expect(formatRelative('2026-11-21T07:00:00Z', now)).toBe('3 h ago');
    expect(formatRelative('2026-11-19T09:00:00Z', now)).toBe('2 d ago');
    expect(formatRelative('2026-11-21T14:00:00Z', now)).toBe('in 4 h');
    expect(formatRelative(null, now)).toBe('—');
    expect(formatRelative('soon', now)).toBe('soon');
  });
});

describe('formatBytes', () => {
  it('uses binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(40 * 1024 ** 3)).toBe('40 GiB');
    expect(formatBytes(undefined)).toBe('—');
  });
});

describe('formatDuration', () => {
  it('keeps the two largest units', () => {
    expect(formatDuration(45)).toBe('45 s');
    expect(formatDuration(3600 + 5 * 60)).toBe('1 h 5 min');
    expect(formatDuration(93600)).toBe('1 d 2 h');
    expect(formatDuration(-1)).toBe('—');
  });
});
