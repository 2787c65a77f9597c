import { Link as RouterLink } from 'react-router';
import Link from '@mui/material/Link';
import Typography from '@mui/material/Typography';
import { ComingSoon, PageHeader } from '../components/ComingSoon';

// Pages whose Engine routes are not built yet. They say what they will do and
// show no data: the console never invents devices, alerts or jobs.

export function PatchesPage() {
  return (
    <ComingSoon
      title="Patches"
      summary="This page is not built yet. The Engine already keeps every device's pending and installed patches (GET /api/device/patches/<hostname> and the fleet audit GET /api/patches/audit); patch policies and installs an operator can start come next."
      items={[
        'show the fleet audit of pending and installed patches, with counts by severity per site',
        'manage patch policies at global, site and device-filter level, including conflicts between layers',
        'schedule patch installs and reboots as durable jobs with their history',
      ]}
    />
  );
}

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <Typography variant="body2">
        There is no console page at this address.{' '}
        <Link component={RouterLink} to="/sites">
          Go to Sites
        </Link>
        .
      </Typography>
    </>
  );
}
