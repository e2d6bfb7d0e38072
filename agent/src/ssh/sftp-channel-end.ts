// Ending an SFTP channel the way sshd does when sftp-server exits: an exit
// status (and, on revocation, a message on stderr) before the close. scp
// exits 1 after a perfect transfer when the status is missing. ssh2's SFTP
// object has no exit() of its own, so this reaches its channel state and
// protocol (private fields of ssh2 1.17.0, pinned exactly); if they are
// missing the channel is only closed.

import type { SFTPWrapper } from 'ssh2';

interface SftpInternals {
  readonly outgoing?: { readonly id: number; readonly state: string };
  readonly _protocol?: {
    exitStatus(channel: number, status: number): void;
    channelExtData(channel: number, data: Buffer, type: number): void;
  };
}

const STDERR = 1; // SSH_EXTENDED_DATA_STDERR

export function endSftpChannel(wrapper: SFTPWrapper, status: number, message?: string): void {
  const { outgoing, _protocol: protocol } = wrapper as unknown as SftpInternals;
  if (outgoing?.state === 'open' && protocol !== undefined) {
    if (message !== undefined)
      protocol.channelExtData(outgoing.id, Buffer.from(`${message}\n`), STDERR);
    protocol.exitStatus(outgoing.id, status);
  }
  wrapper.end();
}
