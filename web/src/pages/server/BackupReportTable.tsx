import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Typography from '@mui/material/Typography';
import type { BackupReport } from '../../api/endpoints';

/**
 * An analyzed backup (docs/api.md "Backup and restore"): the rows a
 * restore imports per table, the schema differences and the problems that
 * stop a restore. The Server page's Backups section and the setup
 * wizard's restore path show it.
 */
export function BackupReportTable({ report, maxHeight }: { report: BackupReport; maxHeight?: number }) {
  const files = report.files ?? [];
  return (
    <Box data-testid="backup-report">
      <Typography variant="body2" sx={{ mb: 1 }}>
        Schema {report.schema_version} (this Engine: {report.running_schema_version}), written{' '}
        {new Date(report.created_at).toLocaleString()}.
      </Typography>
      {(report.problems ?? []).length > 0 && (
        <Alert severity="error" sx={{ mb: 1 }}>
          {(report.problems ?? []).map((p) => (
            <div key={p}>{p}</div>
          ))}
        </Alert>
      )}
      <Box sx={maxHeight ? { maxHeight, overflow: 'auto' } : undefined}>
        <Table size="small" stickyHeader={Boolean(maxHeight)} aria-label="Backup contents">
          <TableHead>
            <TableRow>
              <TableCell>Table</TableCell>
              <TableCell align="right">Rows</TableCell>
              <TableCell>Schema differences</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {(report.tables ?? []).map((t) => (
              <TableRow key={t.name}>
                <TableCell>{t.name}</TableCell>
                <TableCell align="right">{t.rows}</TableCell>
                <TableCell>
                  {[
                    ...(t.missing_columns ?? []).map((c) => `${c} (not here)`),
                    ...(t.new_columns ?? []).map((c) => `${c} (new)`),
                  ].join(', ')}
                </TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      </Box>
      {files.length > 0 && (
        <Typography variant="caption" color="text.secondary" component="p" sx={{ mt: 1 }}>
          Files written back: {files.join(', ')}
        </Typography>
      )}
    </Box>
  );
}
