// Which client certificate the browser presents, without a prompt, to an origin that asks
// for one: Chromium's AUTO_SELECT_CERTIFICATE content setting, written into the profile's
// Preferences before Chromium starts.
//
// Why the profile and not the AutoSelectCertificateForUrls policy: the policy is read from
// /etc/chromium/policies/managed, one file for every Chromium of the machine, so one
// project's rules (and its certificates' names) would apply to every other project's
// sessions, and writing it needs root. The content setting is the same rule, kept per
// profile: each session's root carries only its own project's rules. Measured on Debian's
// Chromium 156, headless (--headless=new) and headful under Xvfb: with the rule the page
// loads; without it Chromium opens its certificate chooser, which nobody can answer in a
// remote session, and the navigation hangs. Preferences are read once, at start: a warm
// pooled browser cannot take a rule, so the sessions that need one launch cold.
/** A distinguished-name filter, as Chromium matches it (exact values; absent: any). */
export interface CertificateNameFilter {
  CN?: string;
  O?: string;
  OU?: string;
  L?: string;
}

export interface AutoSelectCertificate {
  /** `https://host:port`. */
  origin: string;
  /** A certificate matching any of them is presented (the first of those in the store). */
  filters: { ISSUER?: CertificateNameFilter; SUBJECT?: CertificateNameFilter }[];
}

/** Sets the profile's rules, replacing whatever a saved profile carried (a deleted certificate's rule). */
export function autoSelectCertificatePreferences(prefs: any, rules: readonly AutoSelectCertificate[]): void {
  const exceptions: Record<string, { setting: { filters: AutoSelectCertificate['filters'] } }> = {};
  for (const rule of rules) {
    const key = `${contentSettingsOrigin(rule.origin)},*`;
    const filters = [...(exceptions[key]?.setting.filters ?? []), ...rule.filters];
    exceptions[key] = { setting: { filters } };
  }
  prefs.profile = { ...prefs.profile };
  prefs.profile.content_settings = { ...prefs.profile.content_settings };
  prefs.profile.content_settings.exceptions = { ...prefs.profile.content_settings.exceptions, auto_select_certificate: exceptions };
}

/** The port always written, so the rule names exactly the origin it was uploaded for. */
function contentSettingsOrigin(origin: string): string {
  const u = new URL(origin);
  return `${u.protocol}//${u.hostname}:${u.port || '443'}`;
}
