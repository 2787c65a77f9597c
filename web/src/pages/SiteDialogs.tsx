import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import TextField from '@mui/material/TextField';
import { sites as sitesApi } from '../api/endpoints';
import type { Site } from '../api/types';
import { ErrorAlert } from '../components/ErrorAlert';
import { fieldError } from '../components/errors';
import { checkSiteName, checkSlug, NAME_MAX, SLUG_MAX, suggestSlug } from './slug';

export const SITES_QUERY = ['sites'] as const;

/** Create (no `site`) or rename (with `site`) a site. Mount it only while open so its state starts fresh. */
export function SiteFormDialog({ site, onClose }: { site?: Site; onClose: () => void }) {
  const queryClient = useQueryClient();
  const renaming = Boolean(site);
  const [name, setName] = useState(site?.name ?? '');
  const [slug, setSlug] = useState(site?.site_worker_slug ?? '');
  // The slug follows the name until someone edits it by hand.
  const [slugTouched, setSlugTouched] = useState(renaming);
  const [local, setLocal] = useState<{ name?: string | null; slug?: string | null }>({});

  const mutation = useMutation({
    mutationFn: () =>
      site
        ? sitesApi.rename(site.site_id, name.trim(), slug === site.site_worker_slug ? undefined : slug)
        : sitesApi.create(name.trim(), slug),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: SITES_QUERY });
      onClose();
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = { name: checkSiteName(name), slug: checkSlug(slug) };
    setLocal(errors);
    if (!errors.name && !errors.slug) mutation.mutate();
  };

  const nameErr = local.name ?? fieldError(mutation.error, 'name');
  const slugErr = local.slug ?? fieldError(mutation.error, 'site_worker_slug');
  const slugChanged = site && slug !== site.site_worker_slug;
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>{renaming ? `Rename ${site!.name}` : 'Create site'}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['name', 'site_worker_slug']} />
          <TextField
            label="Name"
            name="name"
            autoFocus
            fullWidth
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              setLocal((l) => ({ ...l, name: null }));
              if (!slugTouched) setSlug(suggestSlug(e.target.value));
            }}
            error={Boolean(nameErr)}
            helperText={nameErr ?? `Shown to operators. Up to ${NAME_MAX} characters.`}
            sx={{ mt: 1, mb: 2 }}
          />
          <TextField
            label="Slug"
            name="site_worker_slug"
            fullWidth
            value={slug}
            onChange={(e) => {
              setSlug(e.target.value);
              setSlugTouched(true);
              setLocal((l) => ({ ...l, slug: null }));
            }}
            error={Boolean(slugErr)}
            helperText={
              slugErr ??
              `Names the site worker's task queue site:${slug || '<slug>'}. Lower-case letters, digits and hyphens, up to ${SLUG_MAX}.`
            }
            slotProps={{ htmlInput: { spellCheck: false, autoCapitalize: 'none' } }}
          />
          {slugChanged && (
            <Alert severity="info" variant="outlined" sx={{ mt: 2 }}>
              A new slug moves the site's worker to the task queue <code>site:{slug || '…'}</code>.
            </Alert>
          )}
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Saving…' : renaming ? 'Save' : 'Create'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

export function DeleteSitesDialog({ sites, onClose, onDeleted }: { sites: Site[]; onClose: () => void; onDeleted?: () => void }) {
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: () => sitesApi.remove(sites.map((s) => s.site_id)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: SITES_QUERY });
      onDeleted?.();
      onClose();
    },
  });
  const withDevices = sites.filter((s) => s.device_count > 0);
  const one = sites.length === 1;
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>{one ? `Delete ${sites[0].name}?` : `Delete ${sites.length} sites?`}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} />
        <DialogContentText component="div" sx={{ fontSize: 14 }}>
          {one ? 'This site and its worker queue' : 'These sites and their worker queues'} will be removed. This cannot be
          undone.
          {!one && (
            <ul style={{ margin: '8px 0 0', paddingLeft: 18 }}>
              {sites.map((s) => (
                <li key={s.site_id}>
                  {s.name} <code>({s.site_worker_slug})</code>
                </li>
              ))}
            </ul>
          )}
        </DialogContentText>
        {withDevices.length > 0 && (
          <Alert severity="warning" sx={{ mt: 2 }}>
            {withDevices.map((s) => s.name).join(', ')} still {withDevices.length === 1 ? 'has' : 'have'} devices. The Engine
            refuses to delete a site with devices; move them to another site first.
          </Alert>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button color="error" variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending}>
          {mutation.isPending ? 'Deleting…' : 'Delete'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}
