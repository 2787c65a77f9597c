import { Link as RouterLink } from 'react-router';
import Link from '@mui/material/Link';
import Typography from '@mui/material/Typography';
import { PageHeader } from '../components/ComingSoon';

// The page for addresses the console does not have.

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
