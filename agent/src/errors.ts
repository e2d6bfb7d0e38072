/** A reason the agent cannot start or go on; one line for the operator. */
export class AgentFatalError extends Error {
  override readonly name = 'AgentFatalError';
}
