import { describe, expect, it } from 'vitest';
import { device } from './fixtures';
import { filterDevices, normalizeStatus, readFilters, statusChip, writeFilters } from './status';

describe('normalizeStatus', () => {
  it('reads the drilldown token in any case and rejects other words', () => {
    expect(normalizeStatus('connected')).toBe('connected');
    expect(normalizeStatus('CONNECTED')).toBe('connected');
    expect(normalizeStatus(' Disconnected ')).toBe('disconnected');
    expect(normalizeStatus('Offline')).toBe('offline');
    expect(normalizeStatus('online')).toBeNull();
    expect(normalizeStatus('')).toBeNull();
    expect(normalizeStatus(null)).toBeNull();
  });
});

describe('statusChip', () => {
  it('maps Connected to green, Disconnected to amber and Offline to grey', () => {
    expect(statusChip('Connected')).toEqual({ label: 'Connected', color: 'success' });
    expect(statusChip('Disconnected')).toEqual({ label: 'Disconnected', color: 'warning' });
    expect(statusChip('Offline')).toEqual({ label: 'Offline', color: 'default' });
    expect(statusChip('offline')).toEqual({ label: 'Offline', color: 'default' });
  });

  it('shows an unknown status as it is, in grey', () => {
    expect(statusChip('Booting')).toEqual({ label: 'Booting', color: 'default' });
    expect(statusChip(null)).toEqual({ label: 'Unknown', color: 'default' });
  });
});

describe('readFilters / writeFilters', () => {
  it('reads the spec drilldown URL and keeps the raw status for canonicalising', () => {
    const f = readFilters(new URLSearchParams('site=3&status=OFFLINE'));
    expect(f).toEqual({ siteId: 3, status: 'offline', statusRaw: 'OFFLINE', q: '' });
    expect(readFilters(new URLSearchParams('site=x&status=nope'))).toMatchObject({ siteId: null, status: null });
    expect(readFilters(new URLSearchParams('site=0'))).toMatchObject({ siteId: null });
  });

  it('writes lower-case tokens, drops empty filters and keeps other parameters', () => {
    const base = new URLSearchParams('site=3&status=OFFLINE&q=web&keep=1');
    expect(writeFilters({ siteId: 5, status: 'connected', q: '' }, base).toString()).toBe('site=5&status=connected&keep=1');
    expect(writeFilters({ siteId: null, status: null, q: 'db' }, base).toString()).toBe('q=db&keep=1');
  });
});

describe('filterDevices', () => {
  const list = [
    device('a', { site_id: 1, connectivity_status: 'Connected' }),
    device('b', { site_id: 2, connectivity_status: 'Offline' }),
    device('c', { site_id: 2, connectivity_status: 'Connected' }),
  ];
  it('filters by site and status together', () => {
    expect(filterDevices(list, { siteId: 2, status: null }).map((d) => d.hostname)).toEqual(['b', 'c']);
    expect(filterDevices(list, { siteId: null, status: 'connected' }).map((d) => d.hostname)).toEqual(['a', 'c']);
    expect(filterDevices(list, { siteId: 2, status: 'connected' }).map((d) => d.hostname)).toEqual(['c']);
    expect(filterDevices(list, { siteId: null, status: null })).toHaveLength(3);
  });
});
