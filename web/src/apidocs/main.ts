// The API reference page the Engine serves at /api/docs: Scalar's viewer,
// bundled with the console (no CDN), reading the document the Engine
// generates from its route table (/api/openapi.json). Everything that
// would reach beyond the Engine is off (the CSP would block it anyway): the
// default fonts, telemetry, the AI agent, the MCP generator, the developer
// tools and the hosted client.
import { createApiReference } from '@scalar/api-reference';
import '@scalar/api-reference/style.css';

createApiReference('#api-reference', {
  url: '/api/openapi.json',
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  persistAuth: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
});
