import { describe, expect, it } from 'vitest';
import { isAllowedEnv } from './env-allow-list.js';

describe('session env requests', () => {
  it('honours LANG, LC_* and TERM', () => {
    expect(isAllowedEnv('LANG', 'C.UTF-8')).toBe(true);
    expect(isAllowedEnv('LC_ALL', 'en_US.UTF-8')).toBe(true);
    expect(isAllowedEnv('LC_TIME', 'de_DE.UTF-8')).toBe(true);
    expect(isAllowedEnv('TERM', 'xterm-256color')).toBe(true);
  });

  it('refuses anything that changes how programs start', () => {
    for (const name of ['PATH', 'LD_PRELOAD', 'BASH_ENV', 'HOME', 'LC_', 'lang', 'LANGUAGE']) {
      expect(isAllowedEnv(name, 'x')).toBe(false);
    }
  });

  it('refuses control characters and long values', () => {
    expect(isAllowedEnv('LANG', 'C\u0000x')).toBe(false);
    expect(isAllowedEnv('LANG', 'C\nx')).toBe(false);
    expect(isAllowedEnv('LANG', 'x'.repeat(257))).toBe(false);
    expect(isAllowedEnv('LANG', 'x'.repeat(256))).toBe(true);
  });
});
