// The devices grid's AG Grid infinite-row-model datasource: each block the
// grid needs is one GET /api/devices page (limit/offset), sorted by the
// server on the grid's sort column, under the page's filters.
import type { IDatasource, IGetRowsParams } from 'ag-grid-community';
import { devices as devicesApi, type DevicePageQuery } from '../../api/endpoints';
import type { Device } from '../../api/types';

/** Rows per block (one request each). */
export const BLOCK_SIZE = 100;
/** Blocks the grid keeps; a refresh reloads at most these. */
export const MAX_BLOCKS = 10;

export type DeviceListFilters = Omit<DevicePageQuery, 'limit' | 'offset' | 'sort' | 'signal'>;

export interface BlockResult {
  /** Matching devices in all; null after a failure. */
  total: number | null;
  error: unknown;
}

/** The sort parameter for the grid's sort model: the column ID, `-` first when descending. */
export function sortFromModel(model: IGetRowsParams['sortModel']): string | null {
  const first = model[0];
  if (!first) return null;
  return first.sort === 'desc' ? `-${first.colId}` : first.colId;
}

export function makeDeviceDatasource(filters: DeviceListFilters, onResult: (r: BlockResult) => void): IDatasource {
  const inflight = new Set<AbortController>();
  return {
    getRows(params: IGetRowsParams) {
      const ctl = new AbortController();
      inflight.add(ctl);
      devicesApi
        .page({
          ...filters,
          limit: params.endRow - params.startRow,
          offset: params.startRow,
          sort: sortFromModel(params.sortModel),
          signal: ctl.signal,
        })
        .then((r) => {
          const rows: Device[] = r.devices ?? [];
          // An Engine that does not count answers everything at once.
          const total = typeof r.total === 'number' ? r.total : params.startRow + rows.length;
          params.successCallback(rows, total);
          onResult({ total, error: null });
        })
        .catch((error: unknown) => {
          if (ctl.signal.aborted) return;
          params.failCallback();
          onResult({ total: null, error });
        })
        .finally(() => inflight.delete(ctl));
    },
    // The grid drops a datasource when the filters change: its answers are no longer wanted.
    destroy() {
      for (const c of inflight) c.abort();
      inflight.clear();
    },
  };
}
