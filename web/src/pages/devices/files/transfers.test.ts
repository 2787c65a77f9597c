import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeEngine } from '../../../test/fakeEngine';
import { followTransfer, startDownload, topLevelNames, type TransferSnapshot } from './transfers';

const snap = (state: TransferSnapshot['state'], done: number): TransferSnapshot => ({
  transfer_id: 't1',
  direction: 'download',
  state,
  bytes_total: 10,
  bytes_done: done,
  items: [],
  error: null,
  created_at: '',
  updated_at: '',
  content_name: 'a.zip',
});

afterEach(() => vi.unstubAllGlobals());

describe('transfers client', () => {
  it('starts a download and polls its status until it ends', async () => {
    const engine = fakeEngine({
      'POST /api/device/files/h1/download': { status: 202, body: snap('queued', 0) },
      'GET /api/device/files/h1/transfer/t1/status': [{ body: snap('running', 5) }, { body: snap('completed', 10) }],
    });
    const first = await startDownload('h1', ['/a', '/b']);
    expect(engine.callsTo('POST', '/api/device/files/h1/download')[0].body).toEqual({ paths: ['/a', '/b'] });
    const seen: number[] = [];
    const last = await followTransfer('h1', first, (s) => seen.push(s.bytes_done), () => Promise.resolve());
    expect(last.state).toBe('completed');
    expect(seen).toEqual([0, 5, 10]);
  });

  it('names only the top-level entries of a folder upload', () => {
    const f = new File([''], 'x');
    expect(topLevelNames([{ relativePath: 'dir/a.txt', file: f }, { relativePath: 'dir/b/c.txt', file: f }, { relativePath: 'top.txt', file: f }], ['empty/x'])).toEqual([
      'dir',
      'top.txt',
      'empty',
    ]);
  });
});
