import { afterEach, describe, expect, it, vi } from 'vitest';
import type { IGetRowsParams } from 'ag-grid-community';
import { fakeEngine } from '../../test/fakeEngine';
import { makeDeviceDatasource, sortFromModel } from './deviceDatasource';
import { device } from './fixtures';

function rowsParams(startRow: number, endRow: number, sortModel: IGetRowsParams['sortModel'] = []) {
  let done: (v: { rows: unknown[]; lastRow?: number } | 'failed') => void = () => {};
  const settled = new Promise<{ rows: unknown[]; lastRow?: number } | 'failed'>((r) => (done = r));
  const params = {
    startRow,
    endRow,
    sortModel,
    filterModel: {},
    context: undefined,
    successCallback: (rows: unknown[], lastRow?: number) => done({ rows, lastRow }),
    failCallback: () => done('failed'),
  } as IGetRowsParams;
  return { params, settled };
}

afterEach(() => vi.unstubAllGlobals());

describe('the devices datasource', () => {
  it('asks for the block the grid needs as one page, with the sort and the filters', async () => {
    const engine = fakeEngine({
      'GET /api/devices': { body: { devices: [device('a'), device('b')], total: 1234, limit: 100, offset: 100 } },
    });
    const results: unknown[] = [];
    const tree = { match: 'all' as const, conditions: [{ field: 'os', op: 'contains', value: 'debian' }] };
    const ds = makeDeviceDatasource({ siteId: 2, status: 'offline', filterId: 7, filter: tree }, (r) => results.push(r));
    const { params, settled } = rowsParams(100, 200, [{ colId: 'metadata:12', sort: 'desc' }]);
    ds.getRows(params);
    const got = await settled;
    expect(got).toEqual({ rows: [device('a'), device('b')], lastRow: 1234 });
    expect(results).toEqual([{ total: 1234, error: null }]);
    const q = engine.callsTo('GET', '/api/devices')[0].query;
    expect(Object.fromEntries(q)).toEqual({
      limit: '100',
      offset: '100',
      sort: '-metadata:12',
      site_id: '2',
      status: 'offline',
      filter_id: '7',
      filter: JSON.stringify(tree),
    });
  });

  it('fails the block and reports the error when the Engine refuses', async () => {
    fakeEngine({ 'GET /api/devices': { status: 400, body: { error: 'validation_failed', message: 'bad sort', fields: { sort: 'unknown' } } } });
    const results: { total: number | null; error: unknown }[] = [];
    const ds = makeDeviceDatasource({}, (r) => results.push(r));
    const { params, settled } = rowsParams(0, 100);
    ds.getRows(params);
    expect(await settled).toBe('failed');
    expect(results[0].total).toBeNull();
    expect(String(results[0].error)).toContain('bad sort');
  });

  it('maps the grid sort model to the sort parameter', () => {
    expect(sortFromModel([])).toBeNull();
    expect(sortFromModel([{ colId: 'last_seen', sort: 'asc' }])).toBe('last_seen');
    expect(sortFromModel([{ colId: 'hostname', sort: 'desc' }])).toBe('-hostname');
  });
});
