// Links events carry back into this server. `session_dashboard_url` is the session's page
// in the web console (server/console/), which signs the reader in with an API key first.
export function sessionDashboardUrl(publicUrl: string, sessionId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/console/sessions/${sessionId}`;
}
