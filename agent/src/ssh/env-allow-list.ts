// Which `env` requests a session honours: locale and terminal type, as
// OpenSSH's default `AcceptEnv LANG LC_*` (plus TERM). Anything else (PATH,
// LD_PRELOAD, BASH_ENV, …) would let a client change how the session's
// programs start, so it is refused.

const NAME = /^(?:LANG|TERM|LC_[A-Z_]+)$/;
const MAX_VALUE_BYTES = 256;

export function isAllowedEnv(name: string, value: string): boolean {
  return (
    NAME.test(name) && Buffer.byteLength(value) <= MAX_VALUE_BYTES && !hasControlCharacter(value)
  );
}

// A NUL cannot be passed to exec(2); control characters have no place in a locale name.
function hasControlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
