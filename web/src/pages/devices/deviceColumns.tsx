// The devices grid's columns. A column's ID is what saved views store and
// what GET /api/devices sorts by (`hostname`, `site`, ..., `metadata:<n>`).
import { Link as RouterLink } from 'react-router';
import type { CustomCellRendererProps } from 'ag-grid-react';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Link from '@mui/material/Link';
import type { Device, DeviceListViewSort, MetadataFieldDefinition } from '../../api/types';
import { RelativeTime, StatusChip, TrustBadge } from './chips';
import { devicePath } from './queries';

export interface GridContext {
  now: number;
}

function HostnameCell({ data }: CustomCellRendererProps<Device>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 0.75, height: '100%', minWidth: 0 }}>
      <Link component={RouterLink} to={devicePath(data.hostname)} sx={{ fontWeight: 600 }} noWrap>
        {data.hostname}
      </Link>
      <TrustBadge state={data.trust_state} hideActive />
    </Box>
  );
}

function StatusCell({ data }: CustomCellRendererProps<Device>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <StatusChip status={data.connectivity_status} />
    </Box>
  );
}

function LastSeenCell({ data, context }: CustomCellRendererProps<Device, unknown, GridContext>) {
  if (!data) return null;
  return <RelativeTime value={data.last_seen} now={context.now} />;
}

function TrustCell({ data }: CustomCellRendererProps<Device>) {
  if (!data) return null;
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <TrustBadge state={data.trust_state} />
    </Box>
  );
}

interface BaseColumn {
  id: string;
  label: string;
  def: Omit<ColDef<Device>, 'colId' | 'headerName'>;
}

/** The standard columns, in their default order. */
export const BASE_COLUMNS: readonly BaseColumn[] = [
  { id: 'hostname', label: 'Hostname', def: { field: 'hostname', flex: 1.4, minWidth: 170, cellRenderer: HostnameCell } },
  { id: 'site', label: 'Site', def: { field: 'site_name', flex: 1, minWidth: 120 } },
  { id: 'status', label: 'Status', def: { field: 'connectivity_status', width: 140, cellRenderer: StatusCell } },
  { id: 'os', label: 'OS', def: { field: 'operating_system', flex: 1.3, minWidth: 150 } },
  { id: 'last_seen', label: 'Last seen', def: { field: 'last_seen', width: 130, cellRenderer: LastSeenCell } },
  { id: 'agent_version', label: 'Agent', def: { field: 'agent_version', width: 110, cellClass: 'mono' } },
  { id: 'description', label: 'Description', def: { field: 'description', flex: 1.6, minWidth: 160 } },
  { id: 'trust_state', label: 'Trust', def: { field: 'trust_state', width: 130, cellRenderer: TrustCell } },
];

/** Always shown: it carries the link to the device. */
export const LOCKED_COLUMN = 'hostname';

export const DEFAULT_COLUMNS: readonly string[] = ['hostname', 'site', 'status', 'os', 'last_seen', 'agent_version', 'description'];

export const DEFAULT_SORT: DeviceListViewSort = { column: 'hostname', direction: 'asc' };

export const metadataColumnId = (n: number) => `metadata:${n}`;

export function metadataColumnNumber(id: string): number | null {
  const m = /^metadata:(\d+)$/.exec(id);
  return m ? Number(m[1]) : null;
}

/** Reserved numbers (1 to 10) are the API's own fields and never become columns. */
export const RESERVED_METADATA_MAX = 10;

/**
 * Metadata fields the column chooser offers: labelled, not reserved, and not
 * a "Reserved" placeholder.
 */
export function chooserMetadataFields(defs: readonly MetadataFieldDefinition[]): { field_number: number; description: string }[] {
  return defs
    .filter((d) => {
      const text = (d.description ?? '').trim();
      return d.field_number > RESERVED_METADATA_MAX && !d.reserved && text !== '' && text.toLowerCase() !== 'reserved';
    })
    .map((d) => ({ field_number: d.field_number, description: d.description.trim() }))
    .sort((a, b) => a.field_number - b.field_number);
}

/**
 * Metadata fields a filter can name: every labelled one, reserved included
 * (Server Roles, Bitlocker), but no "Reserved" placeholder.
 */
export function filterableMetadataFields(defs: readonly MetadataFieldDefinition[]): { field_number: number; description: string }[] {
  return defs
    .filter((d) => {
      const text = (d.description ?? '').trim();
      return text !== '' && text.toLowerCase() !== 'reserved';
    })
    .map((d) => ({ field_number: d.field_number, description: d.description.trim() }))
    .sort((a, b) => a.field_number - b.field_number);
}

/** The sort parameter of GET /api/devices for a view's sort. */
export const sortParam = (s: DeviceListViewSort | null) => (s ? (s.direction === 'desc' ? `-${s.column}` : s.column) : null);

/** The grid's column definitions for the chosen columns, in order, with the sort shown on its column. */
export function columnDefsFor(columns: readonly string[], sort: DeviceListViewSort | null, labels: ReadonlyMap<number, string>): ColDef<Device>[] {
  const out: ColDef<Device>[] = [];
  for (const id of columns) {
    const sortOf = sort?.column === id ? sort.direction : null;
    const base = BASE_COLUMNS.find((c) => c.id === id);
    if (base) {
      out.push({ ...base.def, colId: id, headerName: base.label, sort: sortOf });
      continue;
    }
    const n = metadataColumnNumber(id);
    if (n === null) continue;
    out.push({
      colId: id,
      headerName: labels.get(n) ?? `Metadata ${n}`,
      headerTooltip: `Metadata field ${n}`,
      valueGetter: (p) => p.data?.metadata_fields?.[String(n)] ?? '',
      flex: 1,
      minWidth: 140,
      sort: sortOf,
    });
  }
  return out;
}

/** Only columns the grid knows: a view may name a column this console does not offer. */
export function knownColumns(columns: readonly string[]): string[] {
  const ok = columns.filter((id) => BASE_COLUMNS.some((c) => c.id === id) || metadataColumnNumber(id) !== null);
  const unique = [...new Set(ok)];
  return unique.includes(LOCKED_COLUMN) ? unique : [LOCKED_COLUMN, ...unique];
}
