// The profile rules Chromium reads for client certificates: one key an origin (its port
// written out), every certificate of that origin among its filters, and a saved profile's
// old rules replaced, while the rest of its content settings stay.
import { describe, expect, it } from 'vitest';
import { autoSelectCertificatePreferences } from './auto-select-certificates.js';

describe('auto-select certificate preferences', () => {
  it('writes one rule an origin with its port, and replaces the rules a saved profile carried', () => {
    const prefs = {
      profile: {
        exit_type: 'Normal',
        content_settings: {
          exceptions: {
            cookies: { 'https://a.example:443,*': { setting: 1 } },
            auto_select_certificate: { 'https://old.example:443,*': { setting: { filters: [{}] } } },
          },
        },
      },
    };
    const a = { SUBJECT: { CN: 'one' }, ISSUER: { CN: 'ca', O: 'Partner' } };
    const b = { SUBJECT: { CN: 'two' }, ISSUER: { CN: 'ca' } };
    autoSelectCertificatePreferences(prefs, [
      { origin: 'https://portal.example', filters: [a] },
      { origin: 'https://portal.example', filters: [b] },
      { origin: 'https://api.example:8443', filters: [b] },
    ]);
    expect(prefs.profile).toEqual({
      exit_type: 'Normal',
      content_settings: {
        exceptions: {
          cookies: { 'https://a.example:443,*': { setting: 1 } },
          auto_select_certificate: {
            'https://portal.example:443,*': { setting: { filters: [a, b] } },
            'https://api.example:8443,*': { setting: { filters: [b] } },
          },
        },
      },
    });
    autoSelectCertificatePreferences(prefs, []);
    expect(prefs.profile.content_settings.exceptions.auto_select_certificate).toEqual({});
  });
});
