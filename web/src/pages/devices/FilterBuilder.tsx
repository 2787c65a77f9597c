// Edits a device filter tree: groups (all/any, nested up to the language's
// depth) of conditions whose field, operator and value inputs come from
// GET /api/device_filters/metadata. Errors are keyed by the API's JSON paths
// and shown at the node they name.
import { useId, useState } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import ListSubheader from '@mui/material/ListSubheader';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import AddIcon from '@mui/icons-material/Add';
import CloseIcon from '@mui/icons-material/Close';
import PlaylistAddIcon from '@mui/icons-material/PlaylistAdd';
import type { FilterCondition, FilterFieldMeta, FilterGroup, FilterMetadata, FilterNode } from '../../api/types';
import {
  childPath,
  emptyGroup,
  isGroup,
  MAX_CHILDREN,
  MAX_DEPTH,
  newCondition,
  nodeErrors,
  opLabel,
  partError,
  pathIndexes,
  ROOT_PATH,
  updateAt,
  valueKind,
  withOp,
} from './filterTree';

interface BuilderProps {
  meta: FilterMetadata;
  value: FilterGroup;
  onChange: (next: FilterGroup) => void;
  errors: Record<string, string>;
}

export function FilterBuilder({ meta, value, onChange, errors }: BuilderProps) {
  const edit = (path: string, fn: (n: FilterNode) => FilterNode | null) => onChange(updateAt(value, pathIndexes(path), fn));
  return <GroupEditor meta={meta} group={value} path={ROOT_PATH} depth={1} errors={errors} edit={edit} />;
}

type Edit = (path: string, fn: (n: FilterNode) => FilterNode | null) => void;

interface GroupProps {
  meta: FilterMetadata;
  group: FilterGroup;
  path: string;
  depth: number;
  errors: Record<string, string>;
  edit: Edit;
  onRemove?: () => void;
}

function GroupEditor({ meta, group, path, depth, errors, edit, onRemove }: GroupProps) {
  const own = nodeErrors(errors, path);
  const full = group.conditions.length >= MAX_CHILDREN;
  const add = (node: FilterNode) => edit(path, (n) => (isGroup(n) ? { ...n, conditions: [...n.conditions, node] } : n));
  const first = meta.fields[0];
  return (
    <Box
      role="group"
      aria-label={depth === 1 ? 'Filter' : `Group ${path}`}
      data-path={path}
      sx={{
        borderLeft: 3,
        borderColor: own.length ? 'error.main' : depth === 1 ? 'primary.main' : 'divider',
        pl: 1.5,
        py: 0.5,
        display: 'flex',
        flexDirection: 'column',
        gap: 1,
      }}
    >
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, flexWrap: 'wrap' }}>
        <TextField
          select
          size="small"
          label="Match"
          value={group.match}
          onChange={(e) => edit(path, (n) => (isGroup(n) ? { ...n, match: e.target.value as FilterGroup['match'] } : n))}
          sx={{ minWidth: 190 }}
        >
          <MenuItem value="all">All of these</MenuItem>
          <MenuItem value="any">Any of these</MenuItem>
        </TextField>
        <Button size="small" startIcon={<AddIcon />} disabled={!first || full} onClick={() => first && add(newCondition(first))}>
          Add condition
        </Button>
        <Button size="small" startIcon={<PlaylistAddIcon />} disabled={depth >= MAX_DEPTH || full} onClick={() => add(emptyGroup())}>
          Add group
        </Button>
        {onRemove && (
          <Tooltip title="Remove this group">
            <IconButton size="small" aria-label="Remove group" onClick={onRemove}>
              <CloseIcon fontSize="small" />
            </IconButton>
          </Tooltip>
        )}
      </Box>
      {own.map((m) => (
        <Alert key={m} severity="error" variant="outlined" sx={{ py: 0 }} data-testid="node-error">
          {m}
        </Alert>
      ))}
      {group.conditions.map((child, i) => {
        const p = childPath(path, i);
        const remove = () => edit(p, () => null);
        return isGroup(child) ? (
          <GroupEditor key={i} meta={meta} group={child} path={p} depth={depth + 1} errors={errors} edit={edit} onRemove={remove} />
        ) : (
          <ConditionEditor key={i} meta={meta} condition={child} path={p} errors={errors} edit={edit} onRemove={remove} />
        );
      })}
    </Box>
  );
}

interface ConditionProps {
  meta: FilterMetadata;
  condition: FilterCondition;
  path: string;
  errors: Record<string, string>;
  edit: Edit;
  onRemove: () => void;
}

/** Fields grouped under their heading, in the metadata's order. */
function fieldMenu(fields: readonly FilterFieldMeta[]) {
  const out: React.ReactNode[] = [];
  let group: string | null = null;
  for (const f of fields) {
    if (f.group && f.group !== group) {
      group = f.group;
      out.push(<ListSubheader key={`g:${group}`}>{group}</ListSubheader>);
    }
    out.push(
      <MenuItem key={f.field} value={f.field}>
        {f.label}
      </MenuItem>,
    );
  }
  return out;
}

function ConditionEditor({ meta, condition, path, errors, edit, onRemove }: ConditionProps) {
  const field = meta.fields.find((f) => f.field === condition.field);
  const kind = valueKind(field, condition.op);
  const own = nodeErrors(errors, path);
  const err = (part: string) => partError(errors, path, part);
  // Messages for the node itself (not one input) show beside it.
  const loose = own.filter((m) => !['field', 'op', 'key', 'value'].some((p) => err(p) === m));
  const set = (patch: Partial<FilterCondition>) => edit(path, (n) => ({ ...(n as FilterCondition), ...patch }));
  return (
    <Box role="group" aria-label={`Condition ${path}`} data-path={path} sx={{ display: 'flex', flexDirection: 'column', gap: 0.5 }}>
      <Box sx={{ display: 'flex', gap: 1, alignItems: 'flex-start', flexWrap: 'wrap' }}>
        <TextField
          select
          size="small"
          label="Field"
          value={field ? condition.field : ''}
          onChange={(e) => {
            const f = meta.fields.find((x) => x.field === e.target.value);
            if (f) edit(path, () => newCondition(f));
          }}
          error={Boolean(err('field'))}
          helperText={err('field')}
          sx={{ minWidth: 200 }}
        >
          {fieldMenu(meta.fields)}
        </TextField>
        {field?.key_type === 'metadata_field' && (
          <TextField
            select
            size="small"
            label="Metadata field"
            value={condition.key ?? ''}
            onChange={(e) => set({ key: Number(e.target.value) })}
            error={Boolean(err('key'))}
            helperText={err('key')}
            sx={{ minWidth: 200 }}
          >
            {(meta.metadata_fields ?? []).map((m) => (
              <MenuItem key={m.field_number} value={m.field_number}>
                {m.field_number}. {m.description}
              </MenuItem>
            ))}
          </TextField>
        )}
        {field?.key_type === 'software_name' && (
          <TextField
            size="small"
            label="Software name"
            value={condition.key ?? ''}
            onChange={(e) => set({ key: e.target.value })}
            error={Boolean(err('key'))}
            helperText={err('key')}
            sx={{ minWidth: 180 }}
            slotProps={{ htmlInput: { spellCheck: false } }}
          />
        )}
        {field && (
          <TextField
            select
            size="small"
            label="Operator"
            value={field.ops.includes(condition.op) ? condition.op : ''}
            onChange={(e) => edit(path, (n) => withOp(n as FilterCondition, field, e.target.value))}
            error={Boolean(err('op'))}
            helperText={err('op')}
            sx={{ minWidth: 170 }}
          >
            {field.ops.map((op) => (
              <MenuItem key={op} value={op}>
                {opLabel(op)}
              </MenuItem>
            ))}
          </TextField>
        )}
        {field && kind !== 'none' && (
          <ValueInput meta={meta} field={field} kind={kind} value={condition.value} onChange={(v) => set({ value: v })} error={err('value')} />
        )}
        <Tooltip title="Remove this condition">
          <IconButton size="small" aria-label="Remove condition" onClick={onRemove} sx={{ mt: 0.5 }}>
            <CloseIcon fontSize="small" />
          </IconButton>
        </Tooltip>
      </Box>
      {loose.map((m) => (
        <Alert key={m} severity="error" variant="outlined" sx={{ py: 0 }} data-testid="node-error">
          {m}
        </Alert>
      ))}
    </Box>
  );
}

const DURATION_UNITS = [
  { label: 'minutes', seconds: 60 },
  { label: 'hours', seconds: 3600 },
  { label: 'days', seconds: 86400 },
];

/** A datetime-local input's text for an RFC 3339 time, in local time. */
function toLocalInput(v: unknown): string {
  if (typeof v !== 'string' || !v) return '';
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

interface ValueProps {
  meta: FilterMetadata;
  field: FilterFieldMeta;
  kind: string;
  value: unknown;
  onChange: (v: unknown) => void;
  error?: string;
}

function ValueInput({ meta, field, kind, value, onChange, error }: ValueProps) {
  const listId = useId();
  const [unit, setUnit] = useState(() => {
    const s = typeof value === 'number' ? value : Number(value);
    return [...DURATION_UNITS].reverse().find((u) => s > 0 && s % u.seconds === 0)?.seconds ?? 3600;
  });
  const common = { size: 'small' as const, label: 'Value', error: Boolean(error), helperText: error };
  switch (kind) {
    case 'site_ids':
      return (
        <TextField
          {...common}
          select
          label="Sites"
          value={Array.isArray(value) ? value : []}
          onChange={(e) => onChange(e.target.value as unknown as number[])}
          slotProps={{ select: { multiple: true } }}
          sx={{ minWidth: 220 }}
        >
          {(meta.sites ?? []).map((s) => (
            <MenuItem key={s.id} value={s.id}>
              {s.name}
            </MenuItem>
          ))}
        </TextField>
      );
    case 'enum':
      return (
        <TextField {...common} select value={typeof value === 'string' ? value : ''} onChange={(e) => onChange(e.target.value)} sx={{ minWidth: 170 }}>
          {(field.values ?? []).map((v) => (
            <MenuItem key={v} value={v}>
              {v}
            </MenuItem>
          ))}
        </TextField>
      );
    case 'number':
      return (
        <TextField
          {...common}
          type="number"
          value={value === undefined || value === null ? '' : String(value)}
          onChange={(e) => onChange(e.target.value)}
          sx={{ width: 160 }}
        />
      );
    case 'duration_seconds': {
      const seconds = typeof value === 'number' ? value : value === '' || value == null ? null : Number(value);
      const amount = seconds === null || Number.isNaN(seconds) ? '' : String(seconds / unit);
      return (
        <Box sx={{ display: 'flex', gap: 1 }}>
          <TextField
            {...common}
            type="number"
            value={amount}
            onChange={(e) => onChange(e.target.value === '' ? '' : Number(e.target.value) * unit)}
            sx={{ width: 110 }}
          />
          <TextField
            select
            size="small"
            label="Unit"
            value={unit}
            onChange={(e) => {
              const next = Number(e.target.value);
              setUnit(next);
              if (amount !== '') onChange(Number(amount) * next);
            }}
            sx={{ width: 120 }}
          >
            {DURATION_UNITS.map((u) => (
              <MenuItem key={u.seconds} value={u.seconds}>
                {u.label}
              </MenuItem>
            ))}
          </TextField>
        </Box>
      );
    }
    case 'time':
      return (
        <TextField
          {...common}
          type="datetime-local"
          value={toLocalInput(value)}
          onChange={(e) => onChange(e.target.value ? new Date(e.target.value).toISOString() : '')}
          slotProps={{ inputLabel: { shrink: true } }}
          sx={{ width: 230 }}
        />
      );
    default: {
      const suggestions = field.values ?? [];
      return (
        <>
          <TextField
            {...common}
            value={typeof value === 'string' ? value : value == null ? '' : String(value)}
            onChange={(e) => onChange(e.target.value)}
            placeholder={kind === 'cidr' ? '10.0.0.0/8' : kind === 'version' ? '1.2.3' : undefined}
            slotProps={{ htmlInput: { spellCheck: false, list: suggestions.length ? listId : undefined } }}
            sx={{ minWidth: 200 }}
          />
          {suggestions.length > 0 && (
            <datalist id={listId}>
              {suggestions.map((s) => (
                <option key={s} value={s} />
              ))}
            </datalist>
          )}
        </>
      );
    }
  }
}
