import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import TextField from '@mui/material/TextField';
import { directory } from '../../api/endpoints';
import type { DirectoryLookup, DirectoryProvider, DirectorySite } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';

/**
 * Lookup diagnostics for one username: what sign-in would find and give.
 * The cached account of that username can be disabled or enabled here too.
 */
export function LookupDialog({ provider, sites, onClose }: { provider: DirectoryProvider; sites: DirectorySite[]; onClose: () => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const lookup = useMutation({
    mutationFn: () => directory.lookup(provider.provider_id, username.trim(), password === '' ? undefined : password),
  });
  const cache = useMutation({ mutationFn: (enabled: boolean) => directory.setCachedUser(username.trim(), enabled) });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    cache.reset();
    lookup.mutate();
  };
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="sm">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Look up a user in {provider.name}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={lookup.error} fields={['username']} />
          <TextField label="Username" name="username" fullWidth size="small" autoFocus value={username} sx={{ mt: 1, mb: 1.5 }}
            onChange={(e) => setUsername(e.target.value)} error={Boolean(fieldError(lookup.error, 'username'))}
            helperText={fieldError(lookup.error, 'username') ?? 'As typed at sign-in.'} />
          <TextField label="Password (optional)" name="password" type="password" fullWidth size="small" value={password}
            autoComplete="off" onChange={(e) => setPassword(e.target.value)} helperText="Given, the user's bind is tried too." />
          {lookup.data && <LookupResult result={lookup.data} sites={sites} />}
          {lookup.data?.found && (
            <Box sx={{ display: 'flex', gap: 1, mt: 1, alignItems: 'center' }}>
              <Button size="small" onClick={() => cache.mutate(false)} disabled={cache.isPending}>Disable cached account</Button>
              <Button size="small" onClick={() => cache.mutate(true)} disabled={cache.isPending}>Enable cached account</Button>
              {cache.data && <span>{cache.data.username} is {cache.data.enabled ? 'enabled' : 'disabled'}.</span>}
            </Box>
          )}
          <ErrorAlert error={cache.error} />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose}>Close</Button>
          <Button type="submit" variant="contained" disabled={!username.trim() || lookup.isPending}>
            {lookup.isPending ? 'Looking up…' : 'Look up'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

function LookupResult({ result, sites }: { result: DirectoryLookup; sites: DirectorySite[] }) {
  if (!result.found) {
    return <Alert severity="warning" sx={{ mt: 2 }}>No entry matches this username.</Alert>;
  }
  const siteNames = result.site_ids.map((id) => sites.find((s) => s.id === id)?.name ?? `#${id}`);
  return (
    <Alert severity={result.role ? 'success' : 'warning'} sx={{ mt: 2 }} data-testid="lookup-result">
      <div>DN: {result.dn}</div>
      <div>Groups: {result.groups.join('; ') || 'none'}</div>
      <div>Role: {result.role || 'none (sign-in is refused)'}</div>
      <div>Sites: {siteNames.join(', ') || 'none'}</div>
      {result.password_ok !== null && <div>Password: {result.password_ok ? 'accepted' : 'refused'}</div>}
      {Object.entries(result.attributes).map(([k, v]) => (
        <div key={k}>{k}: {v.join(', ')}</div>
      ))}
    </Alert>
  );
}
