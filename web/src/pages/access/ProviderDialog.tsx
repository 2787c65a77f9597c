import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import { directory } from '../../api/endpoints';
import type {
  DirectoryKind,
  DirectoryProvider,
  DirectoryProviderInput,
  PeerCertificate,
  RoleMapping,
  SiteMapping,
} from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { formatDateTime } from '../../components/format';

export const PROVIDERS_QUERY = ['directory', 'providers'] as const;

const KINDS: { value: DirectoryKind; label: string }[] = [
  { value: 'active_directory', label: 'Active Directory (LDAPS)' },
  { value: 'ldaps', label: 'LDAPS' },
  { value: 'ldap', label: 'LDAP (plain, trusted networks only)' },
];

/** host_overrides as editable lines "fqdn=ip". */
export function overridesToText(o: Record<string, string>): string {
  return Object.entries(o)
    .map(([host, ip]) => `${host}=${ip}`)
    .join('\n');
}

/** Parses "fqdn=ip" lines; returns an error message for a malformed line. */
export function parseOverrides(text: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0 || eq === line.length - 1) return `Write each override as host=IP (line "${line}").`;
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

const FIELDS = [
  'name', 'kind', 'host', 'port', 'base_dn', 'user_filter', 'username_attribute', 'group_mode', 'group_base_dn',
  'group_member_attribute', 'bind_dn', 'bind_password', 'ca_pem', 'host_overrides',
] as const;

/** Create (no `provider`) or edit a provider. Mount it only while open. */
export function ProviderDialog({ provider, onClose }: { provider?: DirectoryProvider; onClose: () => void }) {
  const queryClient = useQueryClient();
  const sites = useQuery({ queryKey: ['directory', 'sites'], queryFn: directory.sites });
  const [form, setForm] = useState({
    name: provider?.name ?? '',
    kind: provider?.kind ?? ('active_directory' as DirectoryKind),
    host: provider?.host ?? '',
    port: provider ? String(provider.port) : '',
    base_dn: provider?.base_dn ?? '',
    user_filter: provider?.user_filter ?? '',
    username_attribute: provider?.username_attribute ?? '',
    group_mode: provider?.group_mode ?? '',
    group_base_dn: provider?.group_base_dn ?? '',
    group_member_attribute: provider?.group_member_attribute ?? '',
    bind_dn: provider?.bind_dn ?? '',
    bind_password: '',
    ca_pem: provider?.ca_pem ?? '',
    host_overrides: overridesToText(provider?.host_overrides ?? {}),
  });
  const [roles, setRoles] = useState<RoleMapping[]>(provider?.role_mappings ?? []);
  const [siteMaps, setSiteMaps] = useState<SiteMapping[]>(provider?.site_mappings ?? []);
  const [local, setLocal] = useState<Record<string, string>>({});
  const [cert, setCert] = useState<PeerCertificate | null>(null);
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => {
    setForm((f) => ({ ...f, [k]: e.target.value }));
    setLocal((l) => ({ ...l, [k]: '' }));
  };

  const body = (overrides: Record<string, string>): DirectoryProviderInput => {
    const b: DirectoryProviderInput = {
      name: form.name.trim(), kind: form.kind, host: form.host.trim(), base_dn: form.base_dn.trim(),
      user_filter: form.user_filter.trim(), username_attribute: form.username_attribute.trim(),
      group_base_dn: form.group_base_dn.trim(), group_member_attribute: form.group_member_attribute.trim(),
      bind_dn: form.bind_dn.trim(), ca_pem: form.kind === 'ldap' ? '' : form.ca_pem.trim() ? form.ca_pem : '',
      host_overrides: overrides, role_mappings: roles, site_mappings: siteMaps,
    };
    if (form.port.trim()) b.port = Number(form.port);
    if (form.group_mode) b.group_mode = form.group_mode as DirectoryProviderInput['group_mode'];
    // Left blank on edit, the stored password stays.
    if (form.bind_password) b.bind_password = form.bind_password;
    return b;
  };

  const save = useMutation({
    mutationFn: (b: DirectoryProviderInput) => (provider ? directory.update(provider.provider_id, b) : directory.create(b)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: PROVIDERS_QUERY });
      onClose();
    },
  });
  const fetchCert = useMutation({
    mutationFn: () => {
      const o = parseOverrides(form.host_overrides);
      return directory.certificate(form.host.trim(), Number(form.port || 636), typeof o === 'string' ? {} : o);
    },
    onSuccess: setCert,
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (!form.name.trim()) errs.name = 'Enter a name.';
    if (!form.host.trim()) errs.host = 'Enter the directory host.';
    if (!form.base_dn.trim()) errs.base_dn = 'Enter the base DN.';
    if (form.port.trim() && !/^\d+$/.test(form.port.trim())) errs.port = 'Enter a port number.';
    const overrides = parseOverrides(form.host_overrides);
    if (typeof overrides === 'string') errs.host_overrides = overrides;
    setLocal(errs);
    if (Object.keys(errs).length === 0 && typeof overrides !== 'string') save.mutate(body(overrides));
  };

  const err = (k: string) => local[k] || fieldError(save.error, k);
  const text = (k: (typeof FIELDS)[number], label: string, help: string, extra: object = {}) => (
    <TextField
      label={label} name={k} fullWidth size="small" value={form[k]} onChange={set(k)}
      error={Boolean(err(k))} helperText={err(k) || help} sx={{ mb: 1.5 }}
      slotProps={{ htmlInput: { spellCheck: false, autoCapitalize: 'none' } }} {...extra}
    />
  );
  const tls = form.kind !== 'ldap';
  const mappingFields = [...roles.flatMap((_, i) => [`role_mappings[${i}].group`, `role_mappings[${i}].role`]),
    ...siteMaps.flatMap((_, i) => [`site_mappings[${i}].group`, `site_mappings[${i}].site_ids`])];

  return (
    <Dialog open onClose={save.isPending ? undefined : onClose} fullWidth maxWidth="md">
      <form noValidate onSubmit={submit}>
        <DialogTitle>{provider ? `Edit ${provider.name}` : 'Add directory provider'}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={save.error} fields={[...FIELDS, ...mappingFields]} />
          <Box sx={{ display: 'grid', gridTemplateColumns: { sm: '1fr 1fr' }, columnGap: 2, mt: 1 }}>
            {text('name', 'Name', 'Shown to administrators.', { autoFocus: true })}
            <TextField select label="Kind" name="kind" size="small" value={form.kind} onChange={set('kind')} sx={{ mb: 1.5 }}
              helperText={err('kind') || 'Active Directory reads groups from memberOf.'} error={Boolean(err('kind'))}>
              {KINDS.map((k) => <MenuItem key={k.value} value={k.value}>{k.label}</MenuItem>)}
            </TextField>
            {text('host', 'Host', 'Fully qualified name; TLS checks the certificate against it.')}
            {text('port', 'Port', tls ? 'Default 636.' : 'Default 389.', { inputMode: 'numeric' })}
            {text('base_dn', 'Base DN', 'Where users are searched, like dc=corp,dc=example.')}
            {text('user_filter', 'User filter', 'Optional, like (objectClass=user).')}
            {text('bind_dn', 'Service account DN', 'Searches users; empty for anonymous search.')}
            {text('bind_password', 'Service account password',
              provider?.has_bind_password ? 'Stored; leave blank to keep it.' : 'Sealed with the master cipher, never shown again.',
              { type: 'password', autoComplete: 'new-password' })}
            {text('username_attribute', 'Username attribute', 'Default sAMAccountName (AD) or uid.')}
            <TextField select label="Group membership" name="group_mode" size="small" value={form.group_mode}
              onChange={set('group_mode')} sx={{ mb: 1.5 }} error={Boolean(err('group_mode'))}
              helperText={err('group_mode') || 'Default memberOf for AD, group search otherwise.'}>
              <MenuItem value="">Default for the kind</MenuItem>
              <MenuItem value="member_of">memberOf attribute</MenuItem>
              <MenuItem value="group_search">Search groups</MenuItem>
            </TextField>
            {text('group_base_dn', 'Group base DN', 'Group search only; default the base DN.')}
            {text('group_member_attribute', 'Group member attribute', 'Group search only; default member.')}
          </Box>
          {text('host_overrides', 'Host overrides', 'One host=IP per line: dial the IP, check TLS against the host.', { multiline: true, minRows: 2 })}
          {tls && (
            <>
              {text('ca_pem', 'Trusted CA (PEM)', 'Only these certificates are trusted; empty uses the system roots.', { multiline: true, minRows: 3 })}
              <Button size="small" onClick={() => fetchCert.mutate()} disabled={!form.host.trim() || fetchCert.isPending}>
                {fetchCert.isPending ? 'Fetching…' : 'Fetch server certificate'}
              </Button>
              <ErrorAlert error={fetchCert.error} />
              {cert && <CertificateReview cert={cert} onTrust={() => setForm((f) => ({ ...f, ca_pem: cert.pem }))} />}
            </>
          )}
          <Mappings roles={roles} setRoles={setRoles} siteMaps={siteMaps} setSiteMaps={setSiteMaps}
            sites={sites.data ?? []} error={save.error} />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={save.isPending}>Cancel</Button>
          <Button type="submit" variant="contained" disabled={save.isPending}>
            {save.isPending ? 'Saving…' : provider ? 'Save' : 'Create'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

function CertificateReview({ cert, onTrust }: { cert: PeerCertificate; onTrust: () => void }) {
  return (
    <Alert severity="info" variant="outlined" sx={{ my: 1 }} data-testid="certificate-review"
      action={<Button size="small" onClick={onTrust}>Trust this certificate</Button>}>
      <div>Subject: {cert.subject}</div>
      <div>Issuer: {cert.issuer}</div>
      <div>Names: {cert.sans.join(', ') || '—'}</div>
      <div>Valid: {formatDateTime(cert.not_before)} to {formatDateTime(cert.not_after)}</div>
      <div style={{ wordBreak: 'break-all' }}>SHA-256: {cert.sha256_fingerprint}</div>
      <div>Compare the fingerprint with the directory's own before trusting it.</div>
    </Alert>
  );
}

interface MappingsProps {
  roles: RoleMapping[];
  setRoles: (r: RoleMapping[]) => void;
  siteMaps: SiteMapping[];
  setSiteMaps: (s: SiteMapping[]) => void;
  sites: { id: number; name: string }[];
  error: unknown;
}

function Mappings({ roles, setRoles, siteMaps, setSiteMaps, sites, error }: MappingsProps) {
  const at = <T,>(list: T[], i: number, v: T) => list.map((x, j) => (j === i ? v : x));
  return (
    <Box sx={{ mt: 2 }}>
      <Typography variant="subtitle2">Group → role</Typography>
      <Typography variant="caption" color="text.secondary">
        A group DN or common name. Users in no mapped group cannot sign in; admin wins over operator.
      </Typography>
      {roles.map((m, i) => (
        <Box key={i} sx={{ display: 'flex', gap: 1, mt: 1 }}>
          <TextField size="small" label={`Role group ${i + 1}`} value={m.group} sx={{ flex: 2 }}
            onChange={(e) => setRoles(at(roles, i, { ...m, group: e.target.value }))}
            error={Boolean(fieldError(error, `role_mappings[${i}].group`))} helperText={fieldError(error, `role_mappings[${i}].group`)} />
          <TextField select size="small" label={`Role ${i + 1}`} value={m.role} sx={{ flex: 1 }}
            onChange={(e) => setRoles(at(roles, i, { ...m, role: e.target.value as RoleMapping['role'] }))}>
            <MenuItem value="operator">operator</MenuItem>
            <MenuItem value="admin">admin</MenuItem>
          </TextField>
          <IconButton aria-label={`Remove role mapping ${i + 1}`} onClick={() => setRoles(roles.filter((_, j) => j !== i))}>
            <DeleteOutlineIcon fontSize="small" />
          </IconButton>
        </Box>
      ))}
      <Button size="small" onClick={() => setRoles([...roles, { group: '', role: 'operator' }])}>Add role mapping</Button>

      <Typography variant="subtitle2" sx={{ mt: 2 }}>Group → sites</Typography>
      <Typography variant="caption" color="text.secondary">Replaced at each sign-in.</Typography>
      {siteMaps.map((m, i) => (
        <Box key={i} sx={{ display: 'flex', gap: 1, mt: 1 }}>
          <TextField size="small" label={`Site group ${i + 1}`} value={m.group} sx={{ flex: 2 }}
            onChange={(e) => setSiteMaps(at(siteMaps, i, { ...m, group: e.target.value }))}
            error={Boolean(fieldError(error, `site_mappings[${i}].group`))} helperText={fieldError(error, `site_mappings[${i}].group`)} />
          <TextField select size="small" label={`Sites ${i + 1}`} value={m.site_ids} sx={{ flex: 2 }}
            slotProps={{ select: { multiple: true } }}
            onChange={(e) => setSiteMaps(at(siteMaps, i, { ...m, site_ids: (e.target.value as unknown as number[]).map(Number) }))}
            error={Boolean(fieldError(error, `site_mappings[${i}].site_ids`))} helperText={fieldError(error, `site_mappings[${i}].site_ids`)}>
            {sites.map((s) => <MenuItem key={s.id} value={s.id}>{s.name}</MenuItem>)}
          </TextField>
          <IconButton aria-label={`Remove site mapping ${i + 1}`} onClick={() => setSiteMaps(siteMaps.filter((_, j) => j !== i))}>
            <DeleteOutlineIcon fontSize="small" />
          </IconButton>
        </Box>
      ))}
      <Button size="small" onClick={() => setSiteMaps([...siteMaps, { group: '', site_ids: [] }])}>Add site mapping</Button>
    </Box>
  );
}
