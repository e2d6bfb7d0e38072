import { fileURLToPath } from 'node:url';

/** Absolute path of the proto/ package, where the .proto files live (from src/ or dist/). */
export const PROTO_DIR: string = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
