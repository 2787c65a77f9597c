import { describe, expect, it } from 'vitest';
import { checkSiteName, checkSlug, suggestSlug } from './slug';

describe('suggestSlug', () => {
  it.each([
    ['Head office', 'head-office'],
    ['  Head   Office  ', 'head-office'],
    ['Zürich / Nord (2)', 'zurich-nord-2'],
    ['Ångström Lab', 'angstrom-lab'],
    ['---', ''],
    ['', ''],
    ['Site_42 & Co.', 'site-42-co'],
  ])('%j -> %j', (name, want) => {
    expect(suggestSlug(name)).toBe(want);
  });

  it('keeps at most 51 characters and never ends on a hyphen', () => {
    const slug = suggestSlug(`${'a'.repeat(50)} bcd`);
    expect(slug).toBe('a'.repeat(50));
    expect(suggestSlug('x'.repeat(80))).toHaveLength(51);
    expect(checkSlug(suggestSlug('A very long site name that goes on and on and on past the limit'))).toBeNull();
  });
});

describe('checkSlug', () => {
  it('accepts valid slugs', () => {
    for (const s of ['a', 'head-office', 'x1', 'a'.repeat(51), '0-0']) expect(checkSlug(s)).toBeNull();
  });
  it('rejects invalid slugs', () => {
    for (const s of ['', 'a'.repeat(52), 'Head', '-a', 'a-', 'a_b', 'a b', 'ä']) expect(checkSlug(s)).not.toBeNull();
  });
});

describe('checkSiteName', () => {
  it('requires 1 to 100 characters', () => {
    expect(checkSiteName('HQ')).toBeNull();
    expect(checkSiteName('   ')).not.toBeNull();
    expect(checkSiteName('x'.repeat(101))).not.toBeNull();
  });
});
