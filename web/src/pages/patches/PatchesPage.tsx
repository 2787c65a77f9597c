// The Patches page (/patches): the fleet audit of pending patches with
// counts by severity per site (GET /api/patches/audit), and the patch
// policies (docs/api.md "Patch policies") with an editor that previews a
// draft's coverage and conflicts (POST /api/patches/policies/conflicts)
// before saving.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import LinearProgress from '@mui/material/LinearProgress';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Stack from '@mui/material/Stack';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableContainer from '@mui/material/TableContainer';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import DeleteIcon from '@mui/icons-material/Delete';
import { patchPolicies } from '../../api/endpoints';
import type {
  PatchAuditRow,
  PatchPolicyInput,
  PatchPolicyMetadata,
  PatchPolicyReport,
  PatchPolicyRow,
  PatchPolicyRule,
} from '../../api/types';
import { useSession } from '../../auth/session';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';

export const PATCH_POLICIES_QUERY = 'patch-policies';
const AUDIT_LIMIT = 1000;

/** The severity columns; rows without one (most Linux rows) count as Unrated. */
export const SEVERITIES = ['Critical', 'Important', 'Moderate', 'Low', 'Unrated'] as const;
export type Severity = (typeof SEVERITIES)[number];

export interface SiteCounts {
  site_id: number;
  site_name: string;
  devices: number;
  security: number;
  bySeverity: Record<Severity, number>;
}

/** Pending rows counted per site and severity, sites by name. */
export function severityCounts(rows: PatchAuditRow[]): SiteCounts[] {
  const sites = new Map<number, SiteCounts & { guids: Set<string> }>();
  for (const r of rows) {
    if (r.state !== 'pending') continue;
    let s = sites.get(r.site_id);
    if (!s) {
      s = {
        site_id: r.site_id,
        site_name: r.site_name,
        devices: 0,
        security: 0,
        bySeverity: { Critical: 0, Important: 0, Moderate: 0, Low: 0, Unrated: 0 },
        guids: new Set(),
      };
      sites.set(r.site_id, s);
    }
    const sev = SEVERITIES.find((x) => x.toLowerCase() === r.severity.toLowerCase()) ?? 'Unrated';
    s.bySeverity[sev]++;
    if (r.security) s.security++;
    s.guids.add(r.device_guid);
  }
  return [...sites.values()]
    .map(({ guids, ...rest }) => ({ ...rest, devices: guids.size }))
    .sort((a, b) => a.site_name.localeCompare(b.site_name));
}

function AuditGrid() {
  const audit = useQuery({ queryKey: ['patch-audit'], queryFn: () => patchPolicies.audit(AUDIT_LIMIT) });
  if (audit.isPending) return <LinearProgress />;
  if (audit.isError) return <ErrorAlert error={audit.error} />;
  const counts = severityCounts(audit.data.rows);
  return (
    <Box sx={{ mb: 4 }}>
      <Typography variant="h6" gutterBottom>
        Pending patches by site
      </Typography>
      {audit.data.next_cursor && (
        <Alert severity="info" sx={{ mb: 1 }}>
          Counts cover the first {AUDIT_LIMIT} pending rows.
        </Alert>
      )}
      <TableContainer component={Paper}>
        <Table size="small" aria-label="Pending patches by site">
          <TableHead>
            <TableRow>
              <TableCell>Site</TableCell>
              {SEVERITIES.map((s) => (
                <TableCell key={s} align="right">
                  {s}
                </TableCell>
              ))}
              <TableCell align="right">Security</TableCell>
              <TableCell align="right">Devices</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {counts.length === 0 && (
              <TableRow>
                <TableCell colSpan={SEVERITIES.length + 3}>No pending patches on the devices you can see.</TableCell>
              </TableRow>
            )}
            {counts.map((c) => (
              <TableRow key={c.site_id}>
                <TableCell>{c.site_name}</TableCell>
                {SEVERITIES.map((s) => (
                  <TableCell key={s} align="right">
                    {c.bySeverity[s]}
                  </TableCell>
                ))}
                <TableCell align="right">{c.security}</TableCell>
                <TableCell align="right">{c.devices}</TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </TableContainer>
    </Box>
  );
}

/** The editable document of a policy row (a new one: a site policy). */
export function draftOf(row?: PatchPolicyRow): PatchPolicyInput {
  if (!row) return { name: '', type: 'site', role_scope: 'Server', site_id: null, rules: [], defaults: {} };
  return {
    name: row.name,
    type: row.type,
    role_scope: row.role_scope,
    site_id: row.site_id,
    device_filter_id: row.device_filter_id,
    enabled: row.enabled,
    rules: row.rules.map((r) => ({ ...r })),
    exclusions: row.exclusions,
    defaults: row.defaults,
    maintenance_window: row.maintenance_window,
  };
}

function PolicyEditor({
  row,
  meta,
  onClose,
}: {
  row?: PatchPolicyRow;
  meta: PatchPolicyMetadata;
  onClose: () => void;
}) {
  const qc = useQueryClient();
  const [draft, setDraft] = useState<PatchPolicyInput>(() => draftOf(row));
  const [preview, setPreview] = useState<PatchPolicyReport | null>(null);
  const set = (patch: Partial<PatchPolicyInput>) => {
    setDraft((d) => ({ ...d, ...patch }));
    setPreview(null);
  };
  const rules = draft.rules ?? [];
  const setRule = (i: number, patch: Partial<PatchPolicyRule>) =>
    set({ rules: rules.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  const previewMut = useMutation({ mutationFn: () => patchPolicies.conflicts(draft), onSuccess: setPreview });
  const save = useMutation({
    mutationFn: () => (row ? patchPolicies.update(row.policy_id, draft) : patchPolicies.create(draft)),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: [PATCH_POLICIES_QUERY] });
      onClose();
    },
  });
  const locked = row?.locked ?? false;
  const matchTypes = (rt: string | undefined) => meta.rule_types.find((x) => x.rule_type === rt)?.match_types ?? [];
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="md">
      <DialogTitle>{row ? `Edit ${row.name}` : 'New patch policy'}</DialogTitle>
      <DialogContent>
        <Stack spacing={2} sx={{ mt: 1 }}>
          <TextField label="Name" value={draft.name ?? ''} onChange={(e) => set({ name: e.target.value })} />
          <Stack direction="row" spacing={2}>
            <TextField
              select
              label="Layer"
              value={draft.type}
              disabled={!!row}
              onChange={(e) => set({ type: e.target.value, site_id: null, device_filter_id: null })}
              sx={{ minWidth: 160 }}
            >
              {meta.types
                .filter((t) => t !== 'global' || row)
                .map((t) => (
                  <MenuItem key={t} value={t}>
                    {t}
                  </MenuItem>
                ))}
            </TextField>
            <TextField
              select
              label="Role scope"
              value={draft.role_scope}
              disabled={locked}
              onChange={(e) => set({ role_scope: e.target.value })}
              sx={{ minWidth: 160 }}
            >
              {meta.role_scopes.map((r) => (
                <MenuItem key={r} value={r}>
                  {r}
                </MenuItem>
              ))}
            </TextField>
            {draft.type === 'site' && (
              <TextField
                select
                label="Site"
                value={draft.site_id ?? ''}
                onChange={(e) => set({ site_id: Number(e.target.value) })}
                sx={{ minWidth: 200 }}
              >
                {meta.sites.map((s) => (
                  <MenuItem key={s.site_id} value={s.site_id}>
                    {s.name}
                  </MenuItem>
                ))}
              </TextField>
            )}
            {draft.type === 'device_filter' && (
              <TextField
                select
                label="Device filter"
                value={draft.device_filter_id ?? ''}
                onChange={(e) => set({ device_filter_id: Number(e.target.value) })}
                sx={{ minWidth: 200 }}
              >
                {meta.filters.map((f) => (
                  <MenuItem key={f.device_filter_id} value={f.device_filter_id}>
                    {f.name}
                  </MenuItem>
                ))}
              </TextField>
            )}
          </Stack>
          <Typography variant="subtitle2">Rules</Typography>
          {rules.map((r, i) => (
            <Stack direction="row" spacing={1} key={i} alignItems="center">
              <TextField
                select
                size="small"
                label="Action"
                value={r.action}
                onChange={(e) => setRule(i, { action: e.target.value })}
                sx={{ minWidth: 110 }}
              >
                {meta.actions.map((a) => (
                  <MenuItem key={a} value={a}>
                    {a}
                  </MenuItem>
                ))}
              </TextField>
              <TextField
                select
                size="small"
                label="Rule type"
                value={r.rule_type}
                onChange={(e) => setRule(i, { rule_type: e.target.value, match_type: matchTypes(e.target.value)[0] })}
                sx={{ minWidth: 130 }}
              >
                {meta.rule_types.map((t) => (
                  <MenuItem key={t.rule_type} value={t.rule_type}>
                    {t.rule_type}
                  </MenuItem>
                ))}
              </TextField>
              <TextField
                select
                size="small"
                label="Match"
                value={r.match_type}
                onChange={(e) => setRule(i, { match_type: e.target.value })}
                sx={{ minWidth: 140 }}
              >
                {matchTypes(r.rule_type).map((m) => (
                  <MenuItem key={m} value={m}>
                    {m}
                  </MenuItem>
                ))}
              </TextField>
              <TextField
                size="small"
                label={`Rule ${i + 1} value`}
                value={r.value}
                onChange={(e) => setRule(i, { value: e.target.value })}
              />
              <IconButton aria-label={`Remove rule ${i + 1}`} onClick={() => set({ rules: rules.filter((_, j) => j !== i) })}>
                <DeleteIcon />
              </IconButton>
            </Stack>
          ))}
          <Box>
            <Button
              onClick={() =>
                set({ rules: [...rules, { action: 'approve', rule_type: 'severity', match_type: 'equals', value: '' }] })
              }
            >
              Add rule
            </Button>
          </Box>
          <Stack direction="row" spacing={2}>
            <TextField
              type="number"
              label="Deferral (days)"
              value={draft.defaults?.deferral_days ?? ''}
              onChange={(e) =>
                set({
                  defaults: {
                    ...draft.defaults,
                    deferral_days: e.target.value === '' ? null : Number(e.target.value),
                  },
                })
              }
            />
            <TextField
              select
              label="Reboot policy"
              value={draft.defaults?.reboot_policy ?? ''}
              onChange={(e) => set({ defaults: { ...draft.defaults, reboot_policy: e.target.value } })}
              sx={{ minWidth: 180 }}
            >
              <MenuItem value="">inherit</MenuItem>
              {meta.reboot_policies.map((r) => (
                <MenuItem key={r} value={r}>
                  {r}
                </MenuItem>
              ))}
            </TextField>
          </Stack>
          <FormControlLabel
            control={
              <Checkbox
                checked={draft.confirm_parent_override ?? false}
                onChange={(e) => set({ confirm_parent_override: e.target.checked })}
              />
            }
            label="Approve updates a parent layer blocks"
          />
          {previewMut.isError && <ErrorAlert error={previewMut.error} />}
          {save.isError && <ErrorAlert error={save.error} />}
          {preview && (
            <Alert severity={preview.conflict ? 'warning' : 'success'} data-testid="policy-preview">
              {preview.eligible_device_count} of {preview.raw_device_count} devices eligible;{' '}
              {preview.pending_update_count} approved pending updates on {preview.pending_update_device_count} devices.
              {preview.same_layer_conflicts.map((c, i) => (
                <div key={`s${i}`}>
                  Conflicts with {c.name}: it {c.other_rule.action}s {c.rule.rule_type} {c.rule.value}.
                </div>
              ))}
              {preview.parent_overrides.map((c, i) => (
                <div key={`p${i}`}>
                  Overrides {c.name}, which blocks {c.rule.rule_type} {c.rule.value}.
                </div>
              ))}
            </Alert>
          )}
        </Stack>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        <Button onClick={() => previewMut.mutate()} disabled={previewMut.isPending}>
          Preview
        </Button>
        <Button variant="contained" onClick={() => save.mutate()} disabled={save.isPending}>
          Save
        </Button>
      </DialogActions>
    </Dialog>
  );
}

function PoliciesTable() {
  const isAdmin = useSession().user.role === 'admin';
  const qc = useQueryClient();
  const list = useQuery({ queryKey: [PATCH_POLICIES_QUERY], queryFn: patchPolicies.list });
  const meta = useQuery({ queryKey: ['patch-policy-metadata'], queryFn: patchPolicies.metadata });
  const [editing, setEditing] = useState<PatchPolicyRow | 'new' | null>(null);
  const remove = useMutation({
    mutationFn: (id: number) => patchPolicies.remove(id),
    onSuccess: () => qc.invalidateQueries({ queryKey: [PATCH_POLICIES_QUERY] }),
  });
  if (list.isPending || meta.isPending) return <LinearProgress />;
  if (list.isError) return <ErrorAlert error={list.error} />;
  if (meta.isError) return <ErrorAlert error={meta.error} />;
  return (
    <Box>
      <Stack direction="row" justifyContent="space-between" alignItems="center">
        <Typography variant="h6">Patch policies</Typography>
        {isAdmin && <Button onClick={() => setEditing('new')}>New policy</Button>}
      </Stack>
      {remove.isError && <ErrorAlert error={remove.error} />}
      <TableContainer component={Paper}>
        <Table size="small" aria-label="Patch policies">
          <TableHead>
            <TableRow>
              <TableCell>Name</TableCell>
              <TableCell>Layer</TableCell>
              <TableCell>Role scope</TableCell>
              <TableCell align="right">Eligible / raw devices</TableCell>
              <TableCell align="right">Approved pending updates</TableCell>
              <TableCell />
            </TableRow>
          </TableHead>
          <TableBody>
            {list.data.policies.map((p) => (
              <TableRow key={p.policy_id}>
                <TableCell>
                  {p.name} {p.locked && <Chip size="small" label="locked" />}{' '}
                  {!p.enabled && <Chip size="small" label="disabled" />}
                </TableCell>
                <TableCell>{p.type}</TableCell>
                <TableCell>{p.role_scope}</TableCell>
                <TableCell align="right">
                  {p.eligible_device_count} / {p.raw_device_count}
                </TableCell>
                <TableCell align="right">
                  {p.pending_update_count} on {p.pending_update_device_count} devices
                  {p.pending_update_breakdown.length > 0 &&
                    ` (${p.pending_update_breakdown.map((b) => `${b.layer}: ${b.count}`).join(', ')})`}
                </TableCell>
                <TableCell align="right">
                  {isAdmin && (
                    <Button size="small" onClick={() => setEditing(p)}>
                      Edit
                    </Button>
                  )}
                  {isAdmin && !p.locked && (
                    <Button size="small" color="error" onClick={() => remove.mutate(p.policy_id)}>
                      Delete
                    </Button>
                  )}
                </TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </TableContainer>
      {editing && (
        <PolicyEditor row={editing === 'new' ? undefined : editing} meta={meta.data} onClose={() => setEditing(null)} />
      )}
    </Box>
  );
}

export default function PatchesPage() {
  return (
    <>
      <PageHeader title="Patches" />
      <AuditGrid />
      <PoliciesTable />
    </>
  );
}
