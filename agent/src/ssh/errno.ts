// The error kinds of system calls the SSH side (and the agent's state
// files) name and handle; anything else is passed on.

/** Is `err` a system call's error with one of these codes (ENOENT, ESRCH, …)? */
export function hasErrno(err: unknown, ...codes: readonly string[]): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && codes.includes(code);
}
